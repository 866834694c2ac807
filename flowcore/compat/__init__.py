"""Adapters that let code written for other graph libraries run on flowcore."""
