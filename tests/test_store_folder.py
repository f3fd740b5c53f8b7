"""open_store and open_journal: the one rule for opening a store folder and choosing its embedder,
on real folders (sqlite and Chroma) with the model-free hashing embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentmemory
from agentmemory import EmbedderMismatchError, Entry, NoStoreError, open_journal, open_store
from agentmemory.errors import EmbedderNameError
from embedders import HashingEmbedder


def test_a_new_store_then_reopened_with_its_own_embedder(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with open_store(folder, embedder="hashing:64") as store:
        store.put(Entry("user", "tz", "Europe/London"))
        made_with = store.embedder.fingerprint
    assert (folder / "journal.sqlite3").is_file() and (folder / "chroma").is_dir()
    # no embedder named: the store's own, rebuilt from its fingerprint
    with open_store(folder, create=False) as store:
        assert store.embedder.fingerprint == made_with
        assert [h.entry.name for h in store.recall("Europe London", scopes=["user"])] == ["tz"]


@pytest.mark.slow
def test_a_named_embedder_with_other_vectors_is_refused_unless_reindexing(tmp_path: Path) -> None:
    with open_store(tmp_path, embedder=HashingEmbedder(64)) as store:
        store.put(Entry("user", "tz", "Europe/London"))
    with pytest.raises(EmbedderMismatchError) as caught:
        open_store(tmp_path, embedder="hashing:32")
    assert caught.value.path == str(tmp_path)
    assert caught.value.given.startswith("hashing:32")
    with open_store(tmp_path, embedder="hashing:32", reindex=True) as store:
        assert store.embedder.name == "hashing:32"
        assert store.verify().ok
    with open_store(tmp_path) as store:  # the store's own is now hashing:32
        assert store.embedder.name == "hashing:32"


def test_opening_an_existing_store_refuses_a_folder_without_one(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    for opener in (open_journal, lambda p: open_store(p, create=False)):
        with pytest.raises(NoStoreError) as caught:
            opener(missing)
        assert str(caught.value) == (
            f"agentmemory: no store at {missing} (it has no journal.sqlite3)"
        )
        assert isinstance(caught.value, FileNotFoundError)
    assert not missing.exists()
    a_file = tmp_path / "file"
    a_file.write_text("not a store")
    with pytest.raises(NoStoreError, match="is a file, not a folder") as caught:
        open_store(a_file)
    assert caught.value.is_file


def test_an_unknown_embedder_name_is_our_error_and_nothing_is_created(tmp_path: Path) -> None:
    with pytest.raises(EmbedderNameError, match="no embedder is registered as 'nope'"):
        open_store(tmp_path / "store", embedder="nope")
    with pytest.raises(EmbedderNameError, match="integer dimension"):
        open_store(tmp_path / "store", embedder="hashing:abc")
    assert not (tmp_path / "store").exists()


def test_open_journal_reads_beside_the_process_holding_the_store(tmp_path: Path) -> None:
    with open_store(tmp_path, embedder="hashing") as store:
        store.put(Entry("user", "tz", "Europe/London"))
        with open_journal(tmp_path) as journal:  # no folder lock, no model
            assert [e.content for e in journal.list("user")] == ["Europe/London"]
            assert journal.scopes() == ["user"]


def test_the_default_folder_is_the_user_data_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "/somewhere")
    if not str(agentmemory.default_store_path()).startswith("/somewhere"):
        pytest.skip("XDG_DATA_HOME places the user data folder on Linux only")
    assert agentmemory.default_store_path() == Path("/somewhere/agentmemory/store")


# -- the Chroma server address and a store on servers (no server needed to refuse) --------------

_ADDRESS_ENV = ("AGENTMEMORY_CHROMA_URL", "AGENTMEMORY_CHROMA", "AGENTMEMORY_DSN")
_UNREACHABLE_DSN = "host=127.0.0.1 port=1 dbname=memory user=agent connect_timeout=1"


@pytest.fixture
def no_server_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _ADDRESS_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("address", "url"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("vectors.internal:9000", "http://vectors.internal:9000"),
        ("http://vectors.internal:9000/", "http://vectors.internal:9000"),
        ("http://vectors.internal", "http://vectors.internal:8000"),  # chroma run's port
        ("https://vectors.internal", "https://vectors.internal:443"),
        (" [::1]:8001 ", "http://[::1]:8001"),
    ],
)
def test_a_chroma_server_address_is_host_port_or_a_url(address: str, url: str) -> None:
    from agentmemory.stores.chroma.server import parse_chroma_address

    assert parse_chroma_address(address).url == url


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("", "it is empty"),
        ("vectors.internal", "it has no port"),
        ("vectors.internal:0", "its port is not a number from 1 to 65535"),
        ("vectors.internal:70000", "its port is not a number from 1 to 65535"),
        ("vectors.internal:http", "its port is not a number from 1 to 65535"),
        ("ftp://vectors.internal:21", "its scheme is 'ftp', not http or https"),
        ("http://:8000", "it names no host"),
        ("http://vectors.internal:8000/api", "it has more than a scheme, a host and a port"),
    ],
)
def test_a_bad_chroma_server_address_is_one_error_naming_it(address: str, problem: str) -> None:
    from agentmemory.errors import ChromaAddressError, ChromaServerError
    from agentmemory.stores.chroma.server import parse_chroma_address

    with pytest.raises(ChromaAddressError) as caught:
        parse_chroma_address(address)
    assert str(caught.value) == (
        f"agentmemory: Chroma server {address!r}: {problem}; give HOST:PORT or "
        "http://HOST:PORT (for example 127.0.0.1:8000)"
    )
    assert caught.value.value == address
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, ChromaServerError)


def test_a_password_in_a_bad_address_is_not_repeated() -> None:
    from agentmemory.errors import ChromaAddressError
    from agentmemory.stores.chroma.server import parse_chroma_address

    with pytest.raises(ChromaAddressError) as caught:
        parse_chroma_address("http://agent:Hunter2@vectors.internal:8000")
    assert "Hunter2" not in str(caught.value) and "agent:***@vectors" in str(caught.value)


def test_the_address_variable_and_its_older_name(no_server_env: pytest.MonkeyPatch) -> None:
    from agentmemory.errors import ChromaAddressError
    from agentmemory.opening import chroma_server_url

    assert chroma_server_url() is None
    no_server_env.setenv("AGENTMEMORY_CHROMA", "old.internal:8000")
    assert chroma_server_url() == "http://old.internal:8000"
    no_server_env.setenv("AGENTMEMORY_CHROMA_URL", "http://new.internal:8001")
    assert chroma_server_url() == "http://new.internal:8001"  # the new name wins
    assert chroma_server_url("given.internal:1") == "http://given.internal:1"
    no_server_env.setenv("AGENTMEMORY_CHROMA_URL", "new.internal")
    with pytest.raises(ChromaAddressError, match=r"'new\.internal': it has no port"):
        chroma_server_url()


def test_a_dsn_without_a_chroma_server_is_refused_before_connecting(
    no_server_env: pytest.MonkeyPatch,
) -> None:
    from agentmemory.errors import ChromaAddressError

    with pytest.raises(ChromaAddressError) as caught:
        open_store(dsn=_UNREACHABLE_DSN)
    assert caught.value.value is None
    message = str(caught.value)
    assert message.startswith("agentmemory: Chroma server (no address given): ")
    assert "chroma_url='HOST:PORT'" in message and "open_journal(dsn=...)" in message
    no_server_env.setenv("AGENTMEMORY_DSN", _UNREACHABLE_DSN)
    with pytest.raises(ChromaAddressError):  # the variable is a DSN too
        open_store()


def test_a_folder_and_a_dsn_together_are_refused(
    tmp_path: Path, no_server_env: pytest.MonkeyPatch
) -> None:
    for opener in (open_store, open_journal):
        with pytest.raises(ValueError, match=r"dsn= and path='.*' were both given"):
            opener(tmp_path / "store", dsn=_UNREACHABLE_DSN)
        with pytest.raises(ValueError, match=r"dsn= and format='markdown' were both given"):
            opener(format="markdown", dsn=_UNREACHABLE_DSN)
    assert not (tmp_path / "store").exists()


def test_a_named_folder_never_gives_way_to_the_dsn_variable(
    tmp_path: Path, no_server_env: pytest.MonkeyPatch
) -> None:
    no_server_env.setenv("AGENTMEMORY_DSN", _UNREACHABLE_DSN)  # would fail to connect
    with open_store(tmp_path, embedder="hashing") as store:
        store.put(Entry("user", "tz", "Europe/London"))
        assert store.where == str(tmp_path)
    with open_journal(tmp_path) as journal:
        assert [e.name for e in journal.list("user")] == ["tz"]
