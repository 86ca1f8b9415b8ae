"""The Iceberg REST catalog under the server's authentication and grants: API tokens and OIDC JWTs as
pyiceberg's ``token`` and DuckDB's secret; a reader limited to one scope sees only that namespace and
is refused writes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests
from pyiceberg.exceptions import ForbiddenError, UnauthorizedError

from catalog_api.client import CatalogClient
from catalog_api.server.config import Settings
from catalog_api.streams import StreamWriter
from registry.client import RegistryClient
from registry.serde import Serializer
from tests.iceberg.clients import duck, duck_rows, pyiceberg
from tests.iceberg.test_read import SCHEMA, events
from tests.support.auth import AUDIENCE, ISSUER, Api, SigningKeys, add_user, auth_server, migrated

PASSWORD = "correct horse battery"


@dataclass
class Secured:
    url: str
    admin: Api
    keys: SigningKeys
    #: a token that may read scope ``shop`` only
    shop_reader: str


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("iceberg-auth")
    database_url = migrated(f"sqlite:///{root / 'catalog.db'}")
    keys = SigningKeys()
    settings = Settings(database_url=database_url, warehouse=str(root / "warehouse"), auth=("basic", "oidc"),
                        oidc_issuer=ISSUER, oidc_audience=AUDIENCE, oidc_jwks=str(keys.write_jwks(root / "jwks.json")))
    add_user(database_url, "root", PASSWORD, "admin")
    with auth_server(settings) as url:
        admin = Api(url, auth=("root", PASSWORD))
        setup = admin.ok("POST", "/v1/admin/principals/tokens", json={"name": "setup", "role": "admin"})["token"]
        catalog = CatalogClient(url, token=setup)
        for scope in ("shop", "other"):
            catalog.create_scope(scope)
            catalog.create_table(scope, "orders", SCHEMA)
            registry = RegistryClient(url, scope, token=setup)
            serializer = Serializer(registry, "orders", registry.latest_schemas("orders")[0].schema, register=False)
            with StreamWriter(catalog, registry, scope, "orders", serializer=serializer) as w:
                w.write_table(events(0, 10))
        token = admin.ok("POST", "/v1/admin/principals/tokens", json={"name": "shop-reader"})["token"]
        admin.ok("POST", "/v1/admin/grants", json={"principal": "shop-reader", "permission": "read",
                                                   "resource": "scope:shop"})
        yield Secured(url, admin, keys, token)


def test_a_reader_of_one_scope_sees_only_its_namespace_and_may_not_write(secured: Secured) -> None:
    iceberg = pyiceberg(secured.url, token=secured.shop_reader)
    assert iceberg.list_namespaces() == [("shop",)]
    assert iceberg.list_tables("shop") == [("shop", "orders")]
    assert len(iceberg.load_table("shop.orders").scan().to_arrow()) == 10
    with pytest.raises(ForbiddenError):
        iceberg.load_table("other.orders")
    with pytest.raises(ForbiddenError):
        iceberg.create_namespace("mine")
    with pytest.raises(ForbiddenError):
        iceberg.drop_table("shop.orders")
    with pytest.raises(ForbiddenError):
        iceberg.update_namespace_properties("shop", updates={"k": "v"})
    assert iceberg.table_exists("shop.orders")

    con = duck(secured.url, token=secured.shop_reader)
    assert len(duck_rows(con, "SELECT * FROM ice.shop.orders")) == 10


def test_oidc_jwts_and_no_credentials(secured: Secured) -> None:
    jwt = secured.keys.token(f"r{uuid.uuid4().hex[:6]}", streamcat=["reader"])
    iceberg = pyiceberg(secured.url, token=jwt)
    assert sorted(iceberg.list_namespaces()) == [("other",), ("shop",)]
    assert len(iceberg.load_table("other.orders").scan().to_arrow()) == 10
    with pytest.raises(UnauthorizedError):
        pyiceberg(secured.url)
    answer = requests.get(f"{secured.url}/iceberg/v1/namespaces", timeout=30)
    assert answer.status_code == 401
    assert answer.json()["error"]["type"] == "NotAuthorizedException"

