"""fedeval on Flower: an example Flower App (see README.md)."""
