"""Shared pytest fixtures. Each section belongs to the module it serves."""
from __future__ import annotations

import pytest

# --- embeddings and stores (jacked.index.embed, jacked.index.store) ---------------------------------


@pytest.fixture(scope="session")
def dense_embedder(tmp_path_factory: pytest.TempPathFactory):
    """The default offline dense model, loaded once per test session.

    Its model folder is assembled in a session temp dir. It is also the process-wide
    instance of ``jacked.index.embed.get_dense_embedder()``, so code under test that asks for the
    default model reuses this load instead of loading (or writing under ~/.claude) again.
    """
    from jacked.index.embed import DEFAULT_MODEL, get_dense_embedder

    emb = get_dense_embedder(DEFAULT_MODEL, cache_dir=tmp_path_factory.mktemp("models"))
    emb.load()
    return emb


@pytest.fixture(scope="session")
def sparse_embedder():
    """The BM25 sparse encoder (English), shared by the session."""
    from jacked.index.embed import SparseEmbedder

    return SparseEmbedder()
