"""Writes an OCI image layout as a tar that `ctr images import` takes, with no registry:
one layer (a tar made here), the image config, the manifest and index.json naming the image.

    make_image.py OUT.tar NAME pause PAUSE-BINARY      /pause, the pod sandbox image
    make_image.py OUT.tar NAME busybox BUSYBOX-BINARY  /bin/busybox and a link per applet
"""
import hashlib
import io
import json
import subprocess
import sys
import tarfile


def entry(tar, name, kind, mode=0o755, data=None, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, link
    info.size = len(data) if data is not None else 0
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


def layer_pause(t, binary):
    entry(t, "pause", tarfile.REGTYPE, data=open(binary, "rb").read())
    return {"Entrypoint": ["/pause"]}


def layer_busybox(t, binary):
    # The mountpoints containerd's spec names exist in the image (runc makes missing ones; an
    # image built by docker has them).
    for d in ("bin", "dev", "etc", "proc", "sys", "root"):
        entry(t, d, tarfile.DIRTYPE)
    entry(t, "tmp", tarfile.DIRTYPE, 0o1777)
    entry(t, "etc/passwd", tarfile.REGTYPE, 0o644, b"root:x:0:0:root:/root:/bin/sh\n")
    entry(t, "etc/group", tarfile.REGTYPE, 0o644, b"root:x:0:\n")
    entry(t, "bin/busybox", tarfile.REGTYPE, data=open(binary, "rb").read())
    applets = subprocess.run([binary, "--list"], check=True, capture_output=True,
                             text=True).stdout.split()
    for applet in applets:
        if applet != "busybox":
            entry(t, "bin/" + applet, tarfile.SYMTYPE, link="busybox")
    return {"Cmd": ["/bin/sh"], "Env": ["PATH=/bin"]}


def main():
    out, name, kind, binary = sys.argv[1:5]
    blobs = {}

    def blob(data, media_type):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as t:
        config = {"pause": layer_pause, "busybox": layer_busybox}[kind](t, binary)
    lay = blob(layer.getvalue(), "application/vnd.oci.image.layer.v1.tar")
    cfg = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": config,
                           "rootfs": {"type": "layers", "diff_ids": [lay["digest"]]}}).encode(),
               "application/vnd.oci.image.config.v1+json")
    man = blob(json.dumps({"schemaVersion": 2,
                           "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": cfg, "layers": [lay]}).encode(),
               "application/vnd.oci.image.manifest.v1+json")
    man["annotations"] = {"io.containerd.image.name": name,
                          "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}
    man["platform"] = {"architecture": "amd64", "os": "linux"}
    with tarfile.open(out, "w") as t:
        entry(t, "oci-layout", tarfile.REGTYPE, 0o644, b'{"imageLayoutVersion":"1.0.0"}')
        entry(t, "index.json", tarfile.REGTYPE, 0o644,
              json.dumps({"schemaVersion": 2, "manifests": [man]}).encode())
        for digest, data in blobs.items():
            entry(t, "blobs/sha256/" + digest[7:], tarfile.REGTYPE, 0o644, data)


if __name__ == "__main__":
    main()
