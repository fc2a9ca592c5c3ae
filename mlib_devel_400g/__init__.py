"""casper400g toolflow: register-map generation, simulation helpers, the `casper400g` CLI."""

__version__ = "0.1.0"
