"""Experiments: runs that differ in one switch, from the same seed and data, and how their attention forms.

- `definitions`: an `Experiment` (a base configuration, one switch and the values to try) and the ready-made ones.
- `runs`: training the variants, here and now or on a server as a `LiveExperiment`, and the tables of a run.
- `files`: a whole run as one JSON file, and the result sets the Compare page ships with.

`python -m transformer.experiments [key ...]` reruns the ready-made experiments and writes those result sets.
"""

from .definitions import CUSTOM, MAX_VARIANTS, READY, SWITCHES, Experiment, Switch, SwitchValue
from .files import MAX_JSON_BYTES, experiment_from_json, experiment_to_json, load_shipped, result_path, write_shipped
from .runs import ExperimentRun, LiveExperiment, VariantRun, run_experiment, runs_frame, solved_at, summary_table

__all__ = [
    "CUSTOM",
    "MAX_JSON_BYTES",
    "MAX_VARIANTS",
    "READY",
    "SWITCHES",
    "Experiment",
    "ExperimentRun",
    "LiveExperiment",
    "Switch",
    "SwitchValue",
    "VariantRun",
    "experiment_from_json",
    "experiment_to_json",
    "load_shipped",
    "result_path",
    "run_experiment",
    "runs_frame",
    "solved_at",
    "summary_table",
    "write_shipped",
]
