"""The ServerApp of this Flower App: fedeval's, configured by the run config."""

from fedeval.flower.server_app import app

__all__ = ["app"]
