"""The ClientApp of this Flower App: fedeval's, configured by the run config."""

from fedeval.flower.client_app import app

__all__ = ["app"]
