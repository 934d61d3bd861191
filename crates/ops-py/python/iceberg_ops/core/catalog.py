"""CatalogFactory — PyIceberg catalogs by name, resolved as the ``iceberg-ops`` command
resolves them: ``.pyiceberg.yaml`` (or ``PYICEBERG_HOME``), ``PYICEBERG_CATALOG__<NAME>__*``
variables, and the embedded ``sqlite`` default under ``./.iceberg-ops/`` that needs no
configuration."""

from __future__ import annotations

from typing import Any

from iceberg_ops import _native

__all__ = ["CatalogFactory"]


class CatalogFactory:
    """Builds live PyIceberg catalogs by name."""

    @staticmethod
    def build(name: str = "sqlite") -> Any:
        """The PyIceberg catalog ``name``; ``"sqlite"`` without configuration is the embedded
        default (a SQLite catalog under ``./.iceberg-ops/``, its directories created).

        Raises:
            ValueError: the catalog is not configured, or its configuration is invalid.
        """
        from pyiceberg.catalog import load_catalog

        try:
            kind, properties = _native.resolve_catalog(name)
        except ValueError:
            # A kind iceberg-ops does not open (hive, say) may still be one PyIceberg does:
            # the catalog is the user's, as PyIceberg configures it.
            try:
                return load_catalog(name)
            except Exception:
                pass
            raise
        props = dict(properties)
        # The user's own spelling of the kind where there is one (PyIceberg's `in-memory`,
        # say); iceberg-ops' kind names otherwise, which PyIceberg shares for the rest.
        props.setdefault("type", "in-memory" if kind == "memory" else kind)
        return load_catalog(name, **props)
