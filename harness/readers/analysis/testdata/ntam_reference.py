"""Scores ntam_cases.json with SREGym's own NTAM function and prints the cases with results.

The function is read at run time from the user's copy of SREGym at commit 10e0f046 (the last
that has it): python3 ntam_reference.py SREGYM_LOCALIZATION_PY < ntam_cases.json, where the
file is `git show 10e0f046:srearena/conductor/oracles/localization.py`. Needs networkx
(Debian: python3-networkx). A prediction "-" names nothing of the graph. Nothing of SREGym is
kept in this repository; only the inputs and SREGym's results are (ntam_cases.json).
"""
import json
import sys
import types

import networkx as nx

# The module imports its package's neighbours at the top; ntam_score uses none of them.
for name in ["srearena", "srearena.conductor", "srearena.conductor.oracles", "srearena.observer"]:
    sys.modules[name] = types.ModuleType(name)
base = types.ModuleType("srearena.conductor.oracles.base")
base.Oracle = type("Oracle", (), {"__init__": lambda self, problem: None})
utils = types.ModuleType("srearena.conductor.oracles.utils")
utils.is_exact_match = utils.is_subset = None
sys.modules["srearena.conductor.oracles.base"] = base
sys.modules["srearena.conductor.oracles.utils"] = utils
sys.modules["srearena.observer"].root_path = None

module = types.ModuleType("localization")
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), module.__dict__)

doc = json.load(sys.stdin)
for case in doc["cases"]:
    g = doc["graphs"][case["graph"]]
    oracle = module.LocalizationOracle.__new__(module.LocalizationOracle)
    oracle.topology_graph = nx.Graph()
    for u, v in g["edges"]:
        oracle.topology_graph.add_edge(u, v, weight=1)
    params = case.get("params", {})
    case["sregym_ntam"] = oracle.ntam_score(case["predicted"], g["roots"], **params)
json.dump(doc, sys.stdout, indent=2)
print()
