"""moto_server for the iceberg-ops tests, with two S3 Tables responses corrected.

moto 5.2.5 answers two S3 Tables calls in shapes aws-sdk-s3tables (which iceberg-catalog-s3tables
uses) cannot parse, or that the service model does not allow:
  * GetTable returns `managedByService` as a boolean; the service model says string. It also
    returns `modifiedBy` (required) and `metadataLocation` as null before the first commit: the
    service sets `modifiedBy` to the creator and leaves out an absent `metadataLocation`.
  * UpdateTableMetadataLocation returns `namespace` as a string and `tableArn` instead of
    `tableARN`; the model says a list of strings and `tableARN`.
Everything else is moto's own behaviour. Arguments are moto_server's (e.g. -H 127.0.0.1 -p 5000).
"""

import json
import sys

from moto.s3tables.responses import S3TablesResponse


def _patch(method_name, fix):
    original = getattr(S3TablesResponse, method_name)

    def wrapped(self, *args, **kwargs):
        status, headers, body = original(self, *args, **kwargs)
        data = json.loads(body)
        fix(data)
        return status, headers, json.dumps(data)

    setattr(S3TablesResponse, method_name, wrapped)


def _fix_get_table(data):
    managed = data.get("managedByService")
    if managed is False or managed is None:
        data.pop("managedByService", None)
    elif managed is True:
        data["managedByService"] = "s3tables"
    if data.get("modifiedBy") is None:
        data["modifiedBy"] = data.get("createdBy")
    if data.get("metadataLocation") is None:
        data.pop("metadataLocation", None)


def _fix_update_metadata_location(data):
    if "tableArn" in data:
        data["tableARN"] = data.pop("tableArn")
    if isinstance(data.get("namespace"), str):
        data["namespace"] = [data["namespace"]]


_patch("get_table", _fix_get_table)
_patch("update_table_metadata_location", _fix_update_metadata_location)

if __name__ == "__main__":
    from moto.server import main

    sys.exit(main(sys.argv[1:]))
