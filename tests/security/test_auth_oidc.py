"""OIDC bearer tokens: what a forged, stale or misdirected JWT gets, and where rights come from.

The identity provider is pretend: the test makes its RSA and EC keys and publishes their public
halves in a JWKS file the server reads.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import jwt
import pytest

from catalog_api.server.app import create_app
from catalog_api.server.config import ConfigError, Settings
from tests.conftest import new_database
from tests.support.auth import AUDIENCE, ISSUER, Api, SigningKeys, add_user, auth_server, migrated

ADMIN_PASSWORD = "admin-password"


@dataclass
class Provider:
    """A server trusting the pretend provider's JWKS file."""

    url: str
    keys: SigningKeys
    settings: Settings
    jwks: Path
    admin: Api


@pytest.fixture(scope="module")
def provider(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    root = tmp_path_factory.mktemp("oidc")
    database_url = migrated(new_database("sqlite", root, request))
    keys = SigningKeys()
    jwks = keys.write_jwks(root / "jwks.json")
    settings = Settings(
        database_url=database_url,
        warehouse=str(root / "warehouse"),
        auth=("basic", "oidc"),
        oidc_issuer=ISSUER,
        oidc_audience=AUDIENCE,
        oidc_jwks=str(jwks),
    )
    add_user(database_url, "admin", ADMIN_PASSWORD, "admin")
    with auth_server(settings) as url:
        admin = Api(url, auth=("admin", ADMIN_PASSWORD))
        for scope in ("shop", "other"):
            admin.ok("POST", "/v1/scopes", json={"scopeName": scope})
        yield Provider(url, keys, settings, jwks, admin)


def _as(provider: Provider, token: str) -> Api:
    return Api(provider.url, token=token)


def _error(provider: Provider, token: str, path: str = "/v1/scopes/shop") -> tuple[int, str]:
    response = _as(provider, token).call("GET", path)
    message = response.json()["error"]["message"] if response.status_code >= 400 else ""
    return response.status_code, message


def test_a_good_token_of_either_key_type_reads(provider: Provider) -> None:
    keys = provider.keys
    assert _as(provider, keys.token("alice", streamcat=["reader"])).call("GET", "/v1/scopes/shop").status_code == 200
    assert _as(provider, keys.token("alice", key="ec", streamcat=["reader"])).call(
        "GET", "/v1/scopes/shop"
    ).status_code == 200


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"iss": "https://evil.example"}, "another issuer"),
        ({"aud": "someone-else"}, "another audience"),
        ({"exp": -120}, "expired"),
        ({"nbf": +600}, "not valid yet"),
        ({"exp": None}, "exp"),
        ({"sub": None}, "sub"),
    ],
)
def test_misdirected_or_stale_tokens_are_refused(provider: Provider, overrides: dict[str, object], says: str) -> None:
    # Times are given relative to now, which is when the test runs, not when it was collected.
    now = int(time.time())
    claims = {k: now + v if k in ("exp", "nbf") and isinstance(v, int) else v for k, v in overrides.items()}
    status, message = _error(provider, provider.keys.token("mallory", streamcat=["admin"], **claims))
    assert status == 401
    assert says in message


def test_forged_tokens_are_refused(provider: Provider) -> None:
    keys = provider.keys
    assert _error(provider, keys.token("mallory", key="stranger", streamcat=["admin"]))[0] == 401
    assert _error(provider, keys.unsigned("mallory"))[0] == 401
    # HS256 keyed with the published RSA key must not verify.
    assert _error(provider, keys.hs256_with_public_key("mallory"))[0] == 401
    assert _error(provider, "not.a.jwt")[0] == 401
    assert _error(provider, "garbage")[0] == 401


def test_clock_skew_within_the_leeway_is_tolerated(provider: Provider) -> None:
    token = provider.keys.token("alice", exp=int(time.time()) - 5, streamcat=["reader"])
    assert _as(provider, token).call("GET", "/v1/scopes/shop").status_code == 200


def test_claim_grants_and_stored_grants_both_apply(provider: Provider) -> None:
    keys = provider.keys
    shop = _as(provider, keys.token("bob", streamcat=["write:scope:shop", "something-else", 42]))
    assert shop.call("POST", "/v1/scopes/shop/streams", json={"streamName": "by-bob"}).status_code == 201
    assert shop.call("POST", "/v1/scopes/other/streams", json={"streamName": "by-bob"}).status_code == 403
    assert shop.call("GET", "/v1/scopes/other").status_code == 403
    # A grant stored for the subject adds to what the token says.
    provider.admin.ok("POST", "/v1/admin/grants", json={"principal": "oidc:bob", "permission": "read",
                                                        "resource": "scope:other"})
    assert shop.call("GET", "/v1/scopes/other").status_code == 200
    assert shop.call("POST", "/v1/scopes/other/streams", json={"streamName": "by-bob"}).status_code == 403


def test_a_token_without_the_claim_is_someone_with_no_rights(provider: Provider) -> None:
    nobody = _as(provider, provider.keys.token("carol"))
    assert nobody.call("GET", "/v1/scopes/shop").status_code == 403
    assert nobody.call("GET", "/v1/scopes").status_code == 403, "not even a listing: nothing to list"
    odd = _as(provider, provider.keys.token("carol", streamcat="admin"))
    assert odd.call("GET", "/v1/scopes/shop").status_code == 403, "a claim that is not a list gives nothing"


def test_the_claim_can_be_nested(provider: Provider, tmp_path: Path) -> None:
    settings = replace(provider.settings, oidc_claim="realm_access.roles")
    with auth_server(settings) as url:
        token = provider.keys.token("dave", realm_access={"roles": ["reader"]})
        assert Api(url, token=token).call("GET", "/v1/scopes/shop").status_code == 200


def test_rotated_keys_in_the_file_are_picked_up(provider: Provider, tmp_path: Path) -> None:
    settings = replace(provider.settings, oidc_jwks=str(tmp_path / "jwks.json"))
    old = SigningKeys()
    old.write_jwks(tmp_path / "jwks.json")
    with auth_server(settings) as url:
        assert Api(url, token=old.token("erin", streamcat=["reader"])).call("GET", "/v1/scopes").status_code == 200
        new = SigningKeys()
        (tmp_path / "jwks.json").write_text(json.dumps(new.jwks()) + "\n")
        assert Api(url, token=new.token("erin", streamcat=["reader"])).call("GET", "/v1/scopes").status_code == 200
        assert Api(url, token=old.token("erin", streamcat=["reader"])).call("GET", "/v1/scopes").status_code == 401


def test_oidc_settings_are_checked_at_start(provider: Provider, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="STREAMCAT_OIDC_ISSUER"):
        create_app(replace(provider.settings, oidc_issuer=""))
    with pytest.raises(ConfigError, match="https"):
        create_app(replace(provider.settings, oidc_jwks="http://idp.example/jwks"))
    with pytest.raises(ConfigError, match="not a file"):
        create_app(replace(provider.settings, oidc_jwks=str(tmp_path / "missing.json")))
    symmetric = tmp_path / "symmetric.json"
    symmetric.write_text(json.dumps({"keys": [{"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQ", "kid": "h"}]}))
    with pytest.raises(ConfigError, match="no asymmetric signing key"):
        create_app(replace(provider.settings, oidc_jwks=str(symmetric)))


def test_symmetric_keys_in_the_jwks_are_never_used(provider: Provider, tmp_path: Path) -> None:
    secret = b"secret-secret-secret"
    mixed = provider.keys.jwks()
    mixed["keys"].append({"kty": "oct", "k": base64.urlsafe_b64encode(secret).rstrip(b"=").decode(), "kid": "h"})
    (tmp_path / "mixed.json").write_text(json.dumps(mixed))
    with auth_server(replace(provider.settings, oidc_jwks=str(tmp_path / "mixed.json"))) as url:
        forged = jwt.encode(provider.keys.claims("mallory", streamcat=["admin"]), secret, algorithm="HS256",
                            headers={"kid": "h"})
        assert Api(url, token=forged).call("GET", "/v1/scopes").status_code == 401
        good = provider.keys.token("alice", streamcat=["reader"])
        assert Api(url, token=good).call("GET", "/v1/scopes").status_code == 200
