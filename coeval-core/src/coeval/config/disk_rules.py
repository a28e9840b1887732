"""The rules about the disk (V-10, V-11, V-14): ``resume_from`` exists, a new run's folder
holds no run, a continued one is this experiment's. The runner asks them again just
before it writes (:func:`coeval.config.validate.disk_issues`)."""

from __future__ import annotations

import json
from pathlib import Path

from coeval.config.rule_context import RuleContext, resolve_run_reference, run_folder_path
from coeval.phase_ids import FOLDERS

__all__ = ["DiskRules"]


class DiskRules(RuleContext):
    """The rules about the disk, one method each; the Validator and
    :func:`~coeval.config.validate.disk_issues` run them."""

    __slots__ = ()

    def _resume_source(self) -> None:
        ref = self.experiment.get("resume_from")
        if not isinstance(ref, str) or not ref:
            return
        storage = str(self.experiment.get("storage_folder") or "./eval_runs")
        path = resolve_run_reference(storage, ref)
        if not path.is_dir():
            self.add(
                "V-10",
                ("experiment", "resume_from"),
                f"earlier run '{ref}' not found (looked for {Path(storage) / ref} and {Path(ref)})",
                "set resume_from to the id of a run under storage_folder, or to the path of its folder",
            )

    def _run_folder(self) -> None:
        exp = self.experiment
        if not isinstance(exp.get("id"), str) or not exp.get("id"):
            return
        folder = run_folder_path(exp)
        if self.continue_run:
            meta = folder / "meta.json"
            if not meta.is_file():
                what = "does not exist" if not folder.exists() else "has no meta.json"
                self.add(
                    "V-14",
                    ("experiment", "id"),
                    f"--continue needs an existing run, but {folder} {what}",
                    f"run `coeval repair --run {folder}` (it rebuilds meta.json from the records), then --continue"
                    if _holds_a_run(folder) else
                    "run without --continue to start the experiment, or fix experiment.id / storage_folder",
                )
                return
            try:
                recorded = json.loads(meta.read_text(encoding="utf-8")).get("experiment_id")
            except (OSError, ValueError, AttributeError):
                self.add(
                    "V-14",
                    ("experiment", "id"),
                    f"{meta} cannot be read as JSON",
                    f"run `coeval repair --run {folder}`",
                )
                return
            if recorded and recorded != exp["id"]:
                self.add(
                    "V-14",
                    ("experiment", "id"),
                    f"{meta} belongs to experiment '{recorded}', not '{exp['id']}'",
                    "use the config of that run, or point storage_folder/id at the right folder",
                )
        elif not self.allow_existing_run and _holds_a_run(folder):
            self.add(
                "V-11",
                ("experiment", "id"),
                f"run folder {folder} already exists; a new run would mix its records with the old ones",
                "pass --continue to resume it, choose a new experiment.id, or delete the folder"
                if (folder / "meta.json").exists() else
                f"its meta.json is missing: run `coeval repair --run {folder}` to rebuild it, then --continue",
            )


def _holds_a_run(folder: Path) -> bool:
    """Whether a new run in ``folder`` would mix its records with an earlier one: the folder
    has a ``meta.json`` or phase files. A folder with only a cost estimate (``--estimate-only``)
    or the log of a start-up that died before writing anything is not a run yet."""
    if not folder.exists():
        return False
    if not folder.is_dir() or (folder / "meta.json").exists():
        return True
    return any(any((folder / d).iterdir()) for d in FOLDERS.values() if (folder / d).is_dir())
