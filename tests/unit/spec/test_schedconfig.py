"""The scheduler configuration under test: what schedgate owns, and what it leaves alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from schedgate.cli.mutants import header
from schedgate.errors import DefinitionError
from schedgate.spec.roles import ROLES
from schedgate.spec.schedconfig import load_scheduler_config, parse_scheduler_config

ROOT = Path(__file__).resolve().parents[3]


def test_the_design_profile_loads_with_its_packing_strategy():
    cfg = load_scheduler_config(ROOT / "clusters/profiles/gpu-packing-scheduler.yaml")
    assert cfg.profile_names == ["gpu-packing-scheduler"]
    args = cfg.doc["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"]
    assert args["type"] == "MostAllocated"
    assert {r["name"]: r["weight"] for r in args["resources"]} == {"cpu": 1, "memory": 1, "nvidia.com/gpu": 4}


def test_a_profiles_fragment_becomes_a_whole_configuration():
    cfg = parse_scheduler_config({"profiles": [{"schedulerName": "p"}]})
    eff = cfg.effective(kubeconfig="/k")
    assert cfg.fragment
    assert eff.doc["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert eff.doc["kind"] == "KubeSchedulerConfiguration"
    assert eff.doc["clientConnection"] == {"kubeconfig": "/k"}
    assert eff.doc["leaderElection"]["resourceName"] == "p"
    assert eff.replaced == []


def test_owned_fields_are_replaced_and_reported_and_every_other_setting_is_kept():
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf", "qps": 77},
        "leaderElection": {"leaderElect": True, "resourceName": "mine", "leaseDuration": "30s"},
        "percentageOfNodesToScore": 40, "parallelism": 3,
        "profiles": [{"schedulerName": "p", "plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}}}],
    }
    eff = parse_scheduler_config(doc).effective(kubeconfig="/k")
    assert eff.doc["clientConnection"] == {"kubeconfig": "/k", "qps": 77}
    assert eff.doc["leaderElection"]["leaseDuration"] == "30s"
    assert eff.doc["leaderElection"]["resourceName"] == "p"
    assert eff.doc["percentageOfNodesToScore"] == 40 and eff.doc["parallelism"] == 3
    assert eff.doc["profiles"] == doc["profiles"]
    assert sorted(r.split(":")[0] for r in eff.replaced) == ["clientConnection.kubeconfig",
                                                             "leaderElection.resourceName"]
    assert doc["clientConnection"]["kubeconfig"] == "/etc/kubernetes/scheduler.conf", "input must not be mutated"
    # It set a lease duration: its timing is its own, none of schedgate's is added.
    assert "renewDeadline" not in eff.doc["leaderElection"] and not eff.defaulted


WHOLE = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def test_a_configuration_that_says_nothing_of_leader_election_runs_without_it_and_says_so():
    eff = parse_scheduler_config({"profiles": [{"schedulerName": "p"}]}).effective(kubeconfig="/k")
    election = eff.doc["leaderElection"]
    assert election["leaderElect"] is False and not eff.elects
    assert not any(k in election for k in ("leaseDuration", "renewDeadline", "retryPeriod"))
    assert eff.defaulted == ["leaderElection.leaderElect: false"]


def test_a_configuration_that_turns_leader_election_on_gets_schedgates_shorter_timing_and_says_so():
    eff = parse_scheduler_config({**WHOLE, "leaderElection": {"leaderElect": True},
                                  "profiles": [{"schedulerName": "p"}]}).effective(kubeconfig="/k")
    election = eff.doc["leaderElection"]
    assert eff.elects
    assert (election["leaseDuration"], election["renewDeadline"], election["retryPeriod"]) == ("8s", "6s", "1s")
    assert eff.defaulted == ["leaderElection.leaseDuration: 8s", "leaderElection.renewDeadline: 6s",
                             "leaderElection.retryPeriod: 1s"]


def test_a_configuration_that_sets_lease_timing_only_keeps_leader_election_on_with_its_own_timing():
    eff = parse_scheduler_config({**WHOLE, "leaderElection": {"leaseDuration": "120s"},
                                  "profiles": [{"schedulerName": "p"}]}).effective(kubeconfig="/k")
    assert eff.elects and eff.doc["leaderElection"]["leaseDuration"] == "120s"
    assert eff.defaulted == ["leaderElection.leaderElect: true"]


def test_a_configuration_that_turns_leader_election_off_keeps_it_off_without_a_word():
    eff = parse_scheduler_config({**WHOLE, "leaderElection": {"leaderElect": False},
                                  "profiles": [{"schedulerName": "p"}]}).effective(kubeconfig="/k")
    assert not eff.elects and eff.defaulted == [] and eff.replaced == []


@pytest.mark.parametrize(
    "doc, field, problem",
    [
        pytest.param({"profiles": [{"schedulerName": "default-scheduler"}]}, "profiles[0].schedulerName",
                     "served by the cluster's own default scheduler", id="default-scheduler-name"),
        pytest.param({"profiles": []}, "profiles", "non-empty list", id="no-profiles"),
        pytest.param({"profiles": [{"plugins": {}}]}, "profiles[0].schedulerName", "required", id="unnamed"),
        pytest.param({"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]}, "profiles[1].schedulerName",
                     "used by two profiles", id="duplicate"),
        pytest.param({"profiles": [{"schedulerName": "a"}], "parallelism": 2}, "parallelism",
                     "a fragment holds only 'profiles'", id="fragment-with-more"),
        pytest.param({"kind": "KubeSchedulerConfiguration", "apiVersion": "kubescheduler.config.k8s.io/v1beta3",
                      "profiles": [{"schedulerName": "a"}]}, "apiVersion", "must be kubescheduler.config.k8s.io/v1",
                     id="old-api-version"),
    ],
)
def test_a_bad_configuration_is_one_line_naming_file_and_field(tmp_path, doc, field, problem):
    path = tmp_path / "sched.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(DefinitionError) as err:
        load_scheduler_config(path)
    assert str(err.value).startswith(f"{path}: {field}: ")
    assert problem in str(err.value)


def test_a_missing_configuration_file_says_so(tmp_path):
    with pytest.raises(DefinitionError, match=r"gone\.yaml: no such scheduler configuration file$"):
        load_scheduler_config(tmp_path / "gone.yaml")


def test_every_mutant_is_a_valid_configuration_with_a_description():
    mutants = sorted((ROOT / "clusters/mutants").glob("*.yaml"))
    assert len(mutants) >= 6
    for m in mutants:
        cfg = load_scheduler_config(m)
        replaces = header(m, "option", "--scheduler-config")
        # A mutant keeps the profile names of what it replaces, so the same scenarios run against it (a
        # module's mutant, those of the profile its files name).
        files = {"--scheduler-config": "clusters/profiles/gpu-packing-scheduler.yaml",
                 **{r.option: r.default for r in ROLES}}
        module = header(m, "module", "")
        if module:
            files = {"--scheduler-config": f"{module}/profile.yaml"}
        assert replaces in files, m
        original = load_scheduler_config(ROOT / files[replaces]).profile_names[0]
        assert original in cfg.profile_names, m
        assert m.read_text().startswith("# mutant: "), m


def test_every_mutant_names_existing_scenario_files_that_catch_it():
    from schedgate.cli.mutants import caught_by

    for m in sorted((ROOT / "clusters" / "mutants").glob("*.yaml")):
        files = caught_by(m)
        assert files, f"{m.name}: no '# caught-by:' line"
        module = header(m, "module", "")
        home = f"{module}/" if module else "e2e/"  # a module's mutant is caught by that module's files
        assert all((ROOT / f).is_file() and f.startswith(home) for f in files), (m.name, files)
        assert not module or (ROOT / module / "go.mod").is_file(), m.name


def test_the_shared_slot_profiles_split_into_one_process_each_and_name_their_claim_pool():
    cfg = load_scheduler_config(ROOT / "clusters/profiles/shared-slots.yaml")
    parts = cfg.per_profile()
    assert [p.profile_names for p in parts] == [["gpu-slots-a"], ["gpu-slots-b"]]
    assert {p.lease_name for p in parts} == {"gpu-slots-a", "gpu-slots-b"}
    assert cfg.shared_pools == [("kube-system", "schedgate-network-slot-claims")]
    assert load_scheduler_config(ROOT / "clusters/mutants/shared-slots-no-claim.yaml").shared_pools == []


def test_a_scheduler_claiming_slots_may_only_get_and_update_its_claim_configmap():
    from schedgate.providers.rbac import scheduler_rbac, user_subject

    subject = user_subject("u")
    plain = scheduler_rbac("s", subject, "lease")
    claiming = scheduler_rbac("s", subject, "lease", [("kube-system", "claims")])
    extra = [o for o in claiming if o not in plain]
    role = next(o for o in extra if o["kind"] == "Role")
    assert role["metadata"]["namespace"] == "kube-system"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["claims"],
                              "verbs": ["get", "update"]}]
    binding = next(o for o in extra if o["kind"] == "RoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"] and binding["subjects"] == [subject]
    assert len(extra) == 2


def test_every_scheduler_has_an_aggregated_role_of_the_clusterroles_a_scenario_labels_for_its_plugins():
    from schedgate.providers.rbac import PLUGIN_ROLE_LABEL, scheduler_rbac, user_subject

    subject = user_subject("u")
    for black_box in (False, True):
        objects = {(o["kind"], o["metadata"]["name"]): o for o in scheduler_rbac("s", subject, "l", (), black_box)}
        role = objects[("ClusterRole", "schedgate:s:plugins")]
        assert role["aggregationRule"] == {"clusterRoleSelectors": [{"matchLabels": {PLUGIN_ROLE_LABEL: "true"}}]}
        assert role["rules"] == []  # the controller manager fills them
        binding = objects[("ClusterRoleBinding", "schedgate:s:plugins")]
        assert binding["roleRef"]["name"] == "schedgate:s:plugins" and binding["subjects"] == [subject]


def test_renamed_gives_every_profile_and_so_the_lease_a_suffix() -> None:
    cfg = parse_scheduler_config({"profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}]})
    renamed = cfg.renamed("-slow-api")
    assert renamed.profile_names == ["a-slow-api", "b-slow-api"]
    assert renamed.lease_name == "a-slow-api"
    assert cfg.profile_names == ["a", "b"]  # the original is unchanged
