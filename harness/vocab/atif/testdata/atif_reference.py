"""Validates ATIF documents with Harbor's own pydantic models and prints the verdicts as JSON.

Harbor's models are read at run time from the user's copy: HARBOR_MODELS is a folder holding
the package harbor.models.trajectories (Harbor's src/, or a vendored copy of it); nothing of
Harbor is kept in this repository. Needs pydantic v2.

    HARBOR_MODELS=~/harbor/src python3 atif_reference.py reference/*.json > harbor_verdicts.json

Each verdict is {"valid": true} or {"valid": false, "error": <pydantic's first error line>},
keyed by the file's name; the Go test TestAgreesWithHarbor requires the same verdicts of
atif.schema.json with atif.Check.
"""
import json
import os
import sys

sys.path.insert(0, os.environ["HARBOR_MODELS"])

import pydantic  # noqa: E402
from harbor.models.trajectories import Trajectory  # noqa: E402

if not pydantic.VERSION.startswith("2."):
    sys.exit(f"pydantic {pydantic.VERSION}: Harbor's models need pydantic v2")

verdicts = {}
for path in sys.argv[1:]:
    try:
        Trajectory.model_validate_json(open(path, "rb").read())
        verdicts[os.path.basename(path)] = {"valid": True}
    except pydantic.ValidationError as e:
        first = str(e).splitlines()
        verdicts[os.path.basename(path)] = {"valid": False, "error": " / ".join(first[1:3]).strip()}
fields = Trajectory.model_fields["schema_version"].annotation.__args__
json.dump({"harbor_versions": list(fields), "pydantic": pydantic.VERSION, "verdicts": verdicts}, sys.stdout, indent=2, sort_keys=True)
print()
