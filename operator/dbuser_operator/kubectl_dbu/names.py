"""The API names the plugin uses, spelled here so that reading them imports no API model or client
(``tests/unit/kubectl_dbu/test_names.py`` keeps them equal to the API's own)."""

from __future__ import annotations

from dbuser_operator.runtime.resources import EVENTS, SECRETS, Resource
from dbuser_operator.workload.identity import SIGNER_NAME

GROUP = "mysql.dbuser-operator.dev"
VERSION = "v1alpha1"
DATABASE_USERS = Resource(GROUP, VERSION, "databaseusers", "DatabaseUser")
PODS = Resource("", "v1", "pods", "Pod")
MYSQL_SERVER_KIND = "MySQLServer"
ROTATE_ANNOTATION = f"{GROUP}/rotate"
CREDENTIAL_VERSION_ANNOTATION = f"{GROUP}/credential-version"
MERGE_PATCH = "application/merge-patch+json"
POD_CERTIFICATE_REQUESTS = Resource(
    "certificates.k8s.io", "v1", "podcertificaterequests", "PodCertificateRequest"
)
CERTIFICATES = Resource("cert-manager.io", "v1", "certificates", "Certificate")  # cert-manager's

__all__ = [
    "CERTIFICATES",
    "CREDENTIAL_VERSION_ANNOTATION",
    "DATABASE_USERS",
    "EVENTS",
    "GROUP",
    "MERGE_PATCH",
    "MYSQL_SERVER_KIND",
    "PODS",
    "POD_CERTIFICATE_REQUESTS",
    "ROTATE_ANNOTATION",
    "SECRETS",
    "SIGNER_NAME",
    "VERSION",
]
