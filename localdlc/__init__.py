"""localdlc: a local stand-in for the PAI-DLC OpenAPI 2020-12-03 that runs job pods as processes."""

API_VERSION = "2020-12-03"
__all__ = ["API_VERSION"]
