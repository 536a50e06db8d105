# SPDX-License-Identifier: Apache-2.0
"""The files endpoints: put/get/stat/list, tar both ways, bad paths, a missing file, a full
filesystem."""

import hashlib
import io
import os
import tarfile

import pytest

import husk

BAD_PATHS = ["relative/path", "/tmp/../etc/passwd", "/..", "/tmp/a/../../b", ""]


def test_write_read_stat(sandbox, files):
    data = os.urandom(200000)
    r = sandbox.write("/tmp/deep/er/blob.bin", data, mode=0o600)
    assert r == {"path": "/tmp/deep/er/blob.bin", "size": len(data)}
    assert sandbox.read("/tmp/deep/er/blob.bin") == data
    st = sandbox.stat("/tmp/deep/er/blob.bin")
    assert st["path"] == "/tmp/deep/er/blob.bin"
    assert st["type"] == "file" and st["size"] == len(data) and st["mode"] == "0600"
    # The guest sees the same file.
    r = sandbox.exec(cmd="stat -c '%s %a' /tmp/deep/er/blob.bin; sha256sum < /tmp/deep/er/blob.bin")
    size, mode = r.stdout.splitlines()[0].split()
    assert (int(size), mode) == (len(data), "600")
    assert r.stdout.splitlines()[1].split()[0] == hashlib.sha256(data).hexdigest()
    # What the guest writes, the API reads.
    sandbox.exec(cmd="printf 'from the guest' > /tmp/g.txt")
    assert sandbox.read("/tmp/g.txt") == b"from the guest"
    # Overwrite, default mode.
    sandbox.write("/tmp/g.txt", "short")
    assert sandbox.read("/tmp/g.txt") == b"short"
    assert sandbox.stat("/tmp/g.txt")["size"] == 5


def test_stat_of_dirs_and_symlinks(sandbox, files):
    sandbox.exec(cmd="mkdir -p /tmp/sd && ln -s /etc/hostname /tmp/sd/link").check()
    st = sandbox.stat("/tmp/sd")
    assert st["type"] == "dir"
    st = sandbox.stat("/tmp/sd/link")
    assert st["type"] == "symlink" and st["target"] == "/etc/hostname"
    st = sandbox.stat("/dev/null")
    assert st["type"] == "other"


def test_list_is_sorted_with_stat_fields(sandbox, files):
    sandbox.exec(cmd="mkdir -p /tmp/ls/sub && printf 12345 > /tmp/ls/b && : > /tmp/ls/a && "
                     "ln -s b /tmp/ls/c").check()
    entries = sandbox.list("/tmp/ls")
    assert [e["name"] for e in entries] == ["a", "b", "c", "sub"]
    by = {e["name"]: e for e in entries}
    assert by["a"]["type"] == "file" and by["a"]["size"] == 0
    assert by["b"]["size"] == 5
    assert by["c"]["type"] == "symlink" and by["c"]["target"] == "b"
    assert by["sub"]["type"] == "dir"


def _tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in members.items():
            if data is None:
                ti = tarfile.TarInfo(name)
                ti.type = tarfile.DIRTYPE
                ti.mode = 0o755
                tf.addfile(ti)
            else:
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                ti.mode = 0o640
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def test_tar_upload_and_download(sandbox, files):
    long_name = "d/" + "n" * 120 + ".txt"  # past ustar's 100 bytes: a pax header
    members = {"d": None, "d/one.txt": b"one\n", "d/two/three.bin": os.urandom(5000),
               long_name: b"long\n"}
    r = sandbox.upload_tar("/tmp/up", _tar(members))
    assert r["path"] == "/tmp/up"
    # "files": the contract does not say whether directories count: 3 files, 1 directory.
    assert r["files"] in (3, 4)
    assert sandbox.read("/tmp/up/d/one.txt") == b"one\n"
    assert sandbox.read("/tmp/up/d/two/three.bin") == members["d/two/three.bin"]
    assert sandbox.read("/tmp/up/" + long_name) == b"long\n"
    assert sandbox.stat("/tmp/up/d/one.txt")["mode"] == "0640"

    # And back: the same files under the same names.
    got = sandbox.download_tar("/tmp/up")
    with tarfile.open(fileobj=io.BytesIO(got)) as tf:
        files = {m.name.lstrip("./"): tf.extractfile(m).read() for m in tf.getmembers()
                 if m.isfile()}
    suffixes = {k.split("up/", 1)[-1] for k in files}
    assert suffixes == {"d/one.txt", "d/two/three.bin", long_name}, sorted(files)
    for k, v in files.items():
        assert v == members[k.split("up/", 1)[-1]]


def test_tar_upload_from_a_file_object(sandbox, tmp_path, files):
    path = tmp_path / "x.tar"
    path.write_bytes(_tar({"f.txt": b"streamed\n"}))
    with open(path, "rb") as f:
        r = sandbox.upload_tar("/tmp/fobj", f)
    assert r["files"] == 1
    assert sandbox.read("/tmp/fobj/f.txt") == b"streamed\n"


def test_tar_with_an_escaping_member_is_refused(sandbox, files):
    with pytest.raises(husk.HuskError) as e:
        sandbox.upload_tar("/tmp/esc", _tar({"../../etc/escaped": b"x"}))
    assert e.value.status == 400
    r = sandbox.exec(cmd="test -e /etc/escaped")
    assert r.exit_code != 0


@pytest.mark.parametrize("path", BAD_PATHS)
def test_bad_paths_are_400(sandbox, path, files):
    calls = [lambda: sandbox.write(path, b"x"), lambda: sandbox.read(path),
             lambda: sandbox.stat(path), lambda: sandbox.list(path),
             lambda: sandbox.download_tar(path), lambda: sandbox.upload_tar(path, _tar({}))]
    for call in calls:
        with pytest.raises(husk.HuskError) as e:
            call()
        assert (e.value.status, e.value.code) == (400, "bad_request"), path
    assert sandbox.read("/etc/passwd") != b"x"


def test_missing_file_is_404(sandbox, files):
    for call in (lambda: sandbox.read("/tmp/no/such/file"),
                 lambda: sandbox.stat("/tmp/no/such/file"),
                 lambda: sandbox.list("/tmp/no/such/dir"),
                 lambda: sandbox.download_tar("/tmp/no/such/dir")):
        with pytest.raises(husk.HuskError) as e:
            call()
        assert (e.value.status, e.value.code) == (404, "not_found")


class _Zeros(io.RawIOBase):
    """n zero bytes, read in chunks (sent chunked: the length is not given)."""

    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def test_upload_past_a_full_tmpfs_is_507_and_the_server_goes_on(client, files):
    with husk.Sandbox.create(client, tmpfs=[{"guest": "/scratch", "size_bytes": 64 << 20}]) \
            as sb, husk.Sandbox.create(client) as other:
        with pytest.raises(husk.HuskError) as e:
            sb.write("/scratch/big", bytes(80 << 20))
        assert (e.value.status, e.value.code) == (507, "insufficient_storage"), e.value
        # A chunked upload of unknown length, of 1 GiB (the figure).
        with pytest.raises(husk.HuskError) as e:
            sb.write("/scratch/big2", io.BufferedReader(_Zeros(1 << 30), 1 << 20))
        assert e.value.status == 507
        # Both sandboxes and the server go on.
        assert client.health()["status"] == "ok"
        assert other.exec(["true"]).exit_code == 0
        sb.exec(cmd="rm -f /scratch/big /scratch/big2").check()
        sb.write("/scratch/small", b"fits")
        assert sb.read("/scratch/small") == b"fits"
