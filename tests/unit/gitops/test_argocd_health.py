"""The Argo CD health checks in a real Lua 5.1, on objects captured from real runs
(tests/integration/operator/gitops/test_gitops_health.py with DBUSER_OPERATOR_CAPTURE_HEALTH), and their
Degraded lists against the code's refusals."""

from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.api import argocd_health
from dbuser_operator.api.argocd_health import DEGRADED_REASONS, KINDS, WAITS
from dbuser_operator.controllers.kit.errors import PERMANENT_ERRORS
from tests.conftest import REPO
from tests.support.argocd import health

OBJECTS = Path(__file__).parent / "objects"
CAPTURED = sorted(OBJECTS.glob("*.json"))
GENERATED = REPO / "charts" / "dbuser-operator" / "argocd"
CONTROLLERS = REPO / "operator" / "dbuser_operator" / "controllers"


def captured(name: str) -> dict[str, Any]:
    return dict(json.loads((OBJECTS / f"{name}.json").read_text()))


def test_objects_of_every_kind_and_status_were_captured() -> None:
    fixtures = [json.loads(path.read_text()) for path in CAPTURED]
    assert {fixture["kind"] for fixture in fixtures} == set(KINDS)
    statuses = {fixture["expected"] for fixture in fixtures}
    assert statuses == {"Healthy", "Progressing", "Degraded", "Suspended"}


@pytest.mark.parametrize("path", CAPTURED, ids=lambda path: path.stem)
def test_a_captured_object(path: Path) -> None:
    fixture = json.loads(path.read_text())
    assert health(fixture["kind"], fixture["object"]) == {
        "status": fixture["expected"],
        "message": fixture["message"],
    }


def test_ready_of_an_older_generation_is_progressing() -> None:
    for name in ("user-ready", "user-privilege-not-allowed"):
        obj = captured(name)["object"]
        obj["metadata"]["generation"] += 1
        found = health("DatabaseUser", obj)
        assert found["status"] == "Progressing"
        generation = obj["metadata"]["generation"]
        assert found["message"] == (
            f"generation {generation} not reconciled yet (Ready is of generation {generation - 1})"
        )


def progressing(status: str, reason: str, message: str, generation: int = 1) -> dict[str, Any]:
    return {
        "type": "Progressing",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": "2026-11-26T14:05:10Z",
    }


def test_a_ready_user_with_work_underway_is_progressing_and_healthy_once_settled() -> None:
    """Ready stays True while a render is queued or a rotation retained; Progressing=True says so."""
    obj = captured("user-ready")["object"]
    queued = "connection Secret app-db: its templates are queued to render"
    obj["status"]["conditions"].append(progressing("True", "TemplatesPending", queued))
    assert health("DatabaseUser", obj) == {"status": "Progressing", "message": f"TemplatesPending: {queued}"}
    obj["status"]["conditions"][-1] = progressing("False", "Settled", "no work pending")
    assert health("DatabaseUser", obj)["status"] == "Healthy"


def test_a_settled_progressing_condition_outranks_an_old_rotation_phase() -> None:
    """With Progressing written, the operator says whether a rotation is retained; without it (a status of an
    operator from before the condition), status.rotation.phase does."""
    retained = captured("user-rotation-retained")
    assert health("DatabaseUser", retained["object"])["status"] == "Progressing"
    obj = retained["object"]
    obj["status"]["conditions"].append(progressing("False", "Settled", "no work pending"))
    assert health("DatabaseUser", obj)["status"] == "Healthy"


def test_a_new_generation_still_rendering_is_progressing() -> None:
    """Ready=True stays of the generation applied whole while the new one's render is queued."""
    obj = captured("user-ready")["object"]
    obj["metadata"]["generation"] = 2
    obj["status"]["conditions"].append(progressing("True", "TemplatesPending", "queued", generation=2))
    assert health("DatabaseUser", obj) == {
        "status": "Progressing",
        "message": "generation 2 not reconciled yet (Ready is of generation 1)",
    }


def test_paused_without_status_is_suspended_and_deletion_progressing() -> None:
    obj = captured("user-no-status")["object"]
    obj["spec"]["managementPolicy"] = "Paused"
    assert health("DatabaseUser", obj)["status"] == "Suspended"
    deleting = captured("user-ready")["object"]
    deleting["metadata"]["deletionTimestamp"] = "2026-11-26T14:00:00Z"
    assert health("DatabaseUser", deleting) == {"status": "Progressing", "message": "being deleted"}


def test_a_refusal_under_observe_is_degraded() -> None:
    obj = captured("user-observe")["object"]
    ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
    ready.update(status="False", reason="ObserveNotAllowed", message="owned by another namespace")
    assert health("DatabaseUser", obj)["status"] == "Degraded"


@pytest.mark.parametrize("kind", KINDS)
def test_each_reason_of_the_list_is_degraded_and_no_other(kind: str) -> None:
    """The Lua's list is the Python list: each reason of it is Degraded, the waits and an unknown reason are
    Progressing; and the table in the generated script names exactly those reasons."""
    base = captured("user-server-not-ready" if kind == "DatabaseUser" else "role-exists")["object"]
    for reason in [*sorted(DEGRADED_REASONS[kind]), *sorted(WAITS), "SomethingNew"]:
        obj = copy.deepcopy(base)
        obj["status"]["conditions"] = [
            {"type": "Ready", "status": "False", "reason": reason, "message": "m", "observedGeneration": 1}
        ]
        obj["metadata"]["generation"] = 1
        expected = "Degraded" if reason in DEGRADED_REASONS[kind] else "Progressing"
        assert health(kind, obj) == {"status": expected, "message": f"{reason}: m"}, reason
    script = (GENERATED / "health" / f"{kind}.lua").read_text()
    table = re.search(r"local degraded = \{\n(.*?)\n\}", script, re.S)
    assert table is not None
    assert set(re.findall(r"^  (\w+) = true,$", table.group(1), re.M)) == DEGRADED_REASONS[kind]


def test_the_generated_files_are_current(tmp_path: Path) -> None:
    assert argocd_health.main(["--check"]) == 0
    assert argocd_health.main(["--check", "--output", str(tmp_path)]) == 1
    assert argocd_health.main(["--output", str(tmp_path)]) == 0
    assert argocd_health.main(["--check", "--output", str(tmp_path)]) == 0


def _reasons_raised(call_name: str, *, not_retried: bool) -> set[str]:
    """The literal reasons (a string, or a module-level constant) of ``call_name(...)`` calls in the
    controllers; with ``not_retried``, only those with ``retry=False``."""
    reasons: set[str] = set()
    for source in CONTROLLERS.rglob("*.py"):
        tree = ast.parse(source.read_text())
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign | ast.AnnAssign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == call_name and node.args):
                continue
            retry = next((k.value for k in node.keywords if k.arg == "retry"), None)
            if not_retried and not (isinstance(retry, ast.Constant) and retry.value is False):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                reasons.add(first.value)
            elif isinstance(first, ast.Name) and first.id in constants:
                reasons.add(constants[first.id])
    return reasons


def test_every_reason_the_operator_does_not_retry_is_classified() -> None:
    """A new ``ConditionError(..., retry=False)`` reason must be added to a Degraded list or to WAITS."""
    accounts = (
        DEGRADED_REASONS["DatabaseUser"] | DEGRADED_REASONS["DatabaseRole"] | DEGRADED_REASONS["Database"]
    )
    not_retried = _reasons_raised("ConditionError", not_retried=True)
    assert len(not_retried) > 20, "the scan finds the refusals"
    not_retried |= {error.reason for error in PERMANENT_ERRORS}
    assert not_retried - accounts - WAITS == set()
    server_config = _reasons_raised("ServerConfigError", not_retried=False)
    assert server_config, "the scan finds the server resources' configuration errors"
    assert server_config - DEGRADED_REASONS["MySQLServer"] == set()


def test_every_listed_reason_is_one_the_operator_uses() -> None:
    """No stale name in the lists: each reason is a string the operator's code writes."""
    others = "\n".join(
        path.read_text()
        for path in (REPO / "operator" / "dbuser_operator").rglob("*.py")
        if path.name != "argocd_health.py"
    )
    used = set(re.findall(r'"([A-Z][A-Za-z]+)"', others))
    listed = set().union(*DEGRADED_REASONS.values()) | WAITS
    assert listed - used == set()
