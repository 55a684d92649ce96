"""Offline check of deploy/kubernetes (run by deploy/ci-test.sh).

Built-in kinds are validated strictly against kubernetes-validate's bundled OpenAPI schemas for
the oldest Kubernetes with the fields we use (1.30: appArmorProfile) and the newest it knows.
ServiceMonitor and PrometheusRule are Prometheus Operator CRDs, for which no schema is bundled:
they are checked for apiVersion, kind and the fields the operator reads, and the PrometheusRule's
groups must equal deploy/alerts.yml's plus deploy/recording-rules.yml's.
"""

import pathlib
import sys

import kubernetes_validate
import yaml

HERE = pathlib.Path(__file__).resolve().parent
VERSIONS = ["1.30.0", kubernetes_validate.latest_version()]
CRDS = {
    "servicemonitor.yaml": ("monitoring.coreos.com/v1", "ServiceMonitor"),
    "prometheusrule.yaml": ("monitoring.coreos.com/v1", "PrometheusRule"),
    "kustomization.yaml": ("kustomize.config.k8s.io/v1beta1", "Kustomization"),
}


def load(name):
    with open(HERE / name, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    if len(docs) != 1:
        sys.exit(f"{name}: expected one document, found {len(docs)}")
    return docs[0]


def check_builtin(name, doc):
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            sys.exit(f"{name} fails Kubernetes {version}: {e.message} at {list(e.path)}")
        print(f"ok {name}: {doc['kind']} valid for Kubernetes {version} (strict)")


def check_crd(name, doc):
    want = CRDS[name]
    got = (doc.get("apiVersion"), doc.get("kind"))
    if got != want:
        sys.exit(f"{name}: apiVersion/kind {got}, expected {want}")
    if doc["kind"] == "ServiceMonitor":
        ports = [e["port"] for e in doc["spec"]["endpoints"]]
        service = load("service.yaml")
        if ports != [p["name"] for p in service["spec"]["ports"]]:
            sys.exit(f"{name}: endpoints {ports} are not the Service's ports")
        if doc["spec"]["selector"]["matchLabels"] != service["metadata"]["labels"]:
            sys.exit(f"{name}: selector does not select the Service")
    if doc["kind"] == "PrometheusRule":
        groups = []
        for rules in ["alerts.yml", "recording-rules.yml"]:
            with open(HERE.parent / rules, encoding="utf-8") as f:
                groups += yaml.safe_load(f)["groups"]
        if doc["spec"]["groups"] != groups:
            sys.exit(f"{name}: groups differ from deploy/alerts.yml + recording-rules.yml")
    if doc["kind"] == "Kustomization":
        listed = sorted(doc["resources"])
        present = sorted(p.name for p in HERE.glob("*.yaml") if p.name != name)
        if listed != present:
            sys.exit(f"{name}: resources {listed}, files {present}")
    print(f"ok {name}: {doc['apiVersion']} {doc['kind']} (no bundled schema: fields checked)")


def main():
    files = sorted(HERE.glob("*.yaml"))
    if not files:
        sys.exit(f"no manifests in {HERE}")
    for path in files:
        doc = load(path.name)
        if path.name in CRDS:
            check_crd(path.name, doc)
        else:
            check_builtin(path.name, doc)


if __name__ == "__main__":
    main()
