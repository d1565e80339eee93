"""docs/warehouse.md cannot drift from the catalog: its table reference is the generated one."""

from __future__ import annotations

from pipelines.catalog import TABLES
from pipelines.warehouse.docs import DOC, tables_markdown


def test_the_doc_lists_every_catalog_table_and_column_as_generated() -> None:
    # On failure run `python -m pipelines.warehouse.docs` and commit docs/warehouse.md.
    assert tables_markdown() in DOC.read_text(encoding="utf-8")


def test_the_generated_reference_names_every_table_and_column() -> None:
    reference = tables_markdown()
    for table in TABLES.values():
        assert f"### `{table.name}`" in reference
        for column in table.columns:
            assert f"| `{column.name}` |" in reference
