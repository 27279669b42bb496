"""Goose (block/goose): `jacked.sources.goose.source`."""
