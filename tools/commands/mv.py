"""placeholder"""
import click
@click.command("mv-links")
def mv_links(): pass
@click.command("mv")
def mv(): pass
