"""Catalog access: :class:`iceberg_ops.core.catalog.CatalogFactory`."""
