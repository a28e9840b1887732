"""The five standard phases' fixed facts: their ids, pipeline order, run-folder folders,
the role whose models they call, the record field naming that model, and their titles.

The one owner of these facts: the standard phase classes, the run folder, the config's
defaults, the planner and the reports import them from here, so nothing outside this
module and ``phases/`` spells a standard phase id. A plugin phase declares its own on its
object. It sits directly in ``coeval/`` below every layer (it imports only
:mod:`coeval.record_schema`, which imports nothing), so the config and the run folder,
which the phases build on, take the ids from here too.
"""

from __future__ import annotations

from coeval.record_schema import JUDGE_MODEL_ID, STUDENT_MODEL_ID, TEACHER_MODEL_ID

__all__ = [
    "ATTRIBUTE_MAPPING",
    "CALLER_FIELDS",
    "DATA_GENERATION",
    "EVALUATION",
    "FOLDERS",
    "MAPPING_PHASES",
    "RECORD_PHASES",
    "RESPONSE_COLLECTION",
    "ROLES",
    "RUBRIC_MAPPING",
    "SHORT_TITLES",
    "STANDARD_PHASE_IDS",
    "TITLES",
]

ATTRIBUTE_MAPPING = "attribute_mapping"
RUBRIC_MAPPING = "rubric_mapping"
DATA_GENERATION = "data_generation"
RESPONSE_COLLECTION = "response_collection"
EVALUATION = "evaluation"

#: The standard phases in pipeline order (the keys of ``experiment.phases`` the loader fills).
STANDARD_PHASE_IDS = (ATTRIBUTE_MAPPING, RUBRIC_MAPPING, DATA_GENERATION, RESPONSE_COLLECTION, EVALUATION)
#: The two phases writing one JSON file per task (the attributes and the rubric).
MAPPING_PHASES = (ATTRIBUTE_MAPPING, RUBRIC_MAPPING)
#: The three phases writing JSONL records (datapoints, responses, evaluations), in order.
RECORD_PHASES = (DATA_GENERATION, RESPONSE_COLLECTION, EVALUATION)

#: Phase id -> its folder in a run folder.
FOLDERS = {
    ATTRIBUTE_MAPPING: "phase1_attributes",
    RUBRIC_MAPPING: "phase2_rubric",
    DATA_GENERATION: "phase3_datapoints",
    RESPONSE_COLLECTION: "phase4_responses",
    EVALUATION: "phase5_evaluations",
}
#: Phase id -> the role whose models it calls.
ROLES = {
    ATTRIBUTE_MAPPING: "teacher",
    RUBRIC_MAPPING: "teacher",
    DATA_GENERATION: "teacher",
    RESPONSE_COLLECTION: "student",
    EVALUATION: "judge",
}
#: Record phase id -> the record field naming the model that made the call.
CALLER_FIELDS = {
    DATA_GENERATION: TEACHER_MODEL_ID,
    RESPONSE_COLLECTION: STUDENT_MODEL_ID,
    EVALUATION: JUDGE_MODEL_ID,
}
#: Phase id -> how pages and tables name it.
TITLES = {
    ATTRIBUTE_MAPPING: "1 attribute mapping",
    RUBRIC_MAPPING: "2 rubric mapping",
    DATA_GENERATION: "3 data generation",
    RESPONSE_COLLECTION: "4 response collection",
    EVALUATION: "5 evaluation",
}
#: Phase id -> its short column label.
SHORT_TITLES = {
    ATTRIBUTE_MAPPING: "1 attributes",
    RUBRIC_MAPPING: "2 rubric",
    DATA_GENERATION: "3 datapoints",
    RESPONSE_COLLECTION: "4 responses",
    EVALUATION: "5 evaluations",
}
