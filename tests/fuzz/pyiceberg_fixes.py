"""One correction to PyIceberg 0.12, applied before the fuzzer reads or writes anything.

PyIceberg rebuilds a list (or map) whose elements are structs from the list's offsets alone,
which drops its validity bitmap: a NULL `list<struct<...>>` or `map<_, struct<...>>` becomes an
empty one, on read and on write (apache/iceberg-python#3833, open; its fix, #3834, passes the
list's null mask, which is what this does). Uncorrected, the oracle reads NULL for a column a
file lacks but [] for the same NULL stored in a file iceberg-ops wrote, and reports a correct
copy as wrong. The corrected methods are PyIceberg 0.12's own with `mask=` added.
"""

import pyarrow as pa
from pyiceberg.io import pyarrow as _io

_Visitor = _io.ArrowProjectionVisitor


def _list(self, list_type, list_array, value_array):
    if isinstance(list_array, (pa.ListArray, pa.LargeListArray, pa.FixedSizeListArray)) and value_array is not None:
        list_initializer = pa.large_list if isinstance(list_array, pa.LargeListArray) else pa.list_
        if isinstance(value_array, pa.StructArray) and not isinstance(list_array, pa.FixedSizeListArray):
            list_array = pa.LargeListArray.from_arrays(list_array.offsets, value_array, mask=list_array.is_null())
        value_array = self._cast_if_needed(list_type.element_field, value_array)
        arrow_field = list_initializer(self._construct_field(list_type.element_field, value_array.type))
        return list_array.cast(arrow_field)
    return None


def _map(self, map_type, map_array, key_result, value_result):
    if isinstance(map_array, pa.MapArray) and key_result is not None and value_result is not None:
        key_result = self._cast_if_needed(map_type.key_field, key_result)
        value_result = self._cast_if_needed(map_type.value_field, value_result)
        arrow_field = pa.map_(
            self._construct_field(map_type.key_field, key_result.type),
            self._construct_field(map_type.value_field, value_result.type),
        )
        if isinstance(value_result, pa.StructArray):
            return pa.MapArray.from_arrays(map_array.offsets, key_result, value_result, arrow_field,
                                           mask=map_array.is_null())
        return map_array.cast(arrow_field)
    return None


_Visitor.list = _list
_Visitor.map = _map
