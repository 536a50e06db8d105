#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the config fuzzer's seeds: `husk spec`'s documents (DIR/default.json and
DIR/rootless.json, which fuzz_config writes with CONFIG_FUZZ_SEEDS=DIR) edited as the
integration tests edit them (oci-cgroups-v1.sh, oci-guestview.sh, oci-idmap.sh, oci.sh's
seccomp profiles, oci-sysctl.sh), plus hooks, rlimits, mounts and annotations.
    tests/fuzz/config/make-seeds.py DIR"""
import copy
import json
import sys

d = sys.argv[1]
base = json.load(open(d + "/default.json"))


def write(name, c):
    with open("%s/%s.json" % (d, name), "w") as f:
        json.dump(c, f, indent=1)


c = copy.deepcopy(base)
c["linux"]["cgroupsPath"] = "/husk/fuzz"
c["linux"]["resources"] = {
    "memory": {"limit": 268435456, "reservation": 134217728, "swap": 268435456},
    "cpu": {"shares": 512, "quota": 50000, "period": 100000, "cpus": "0", "mems": "0"},
    "pids": {"limit": 64},
    "blockIO": {"weight": 300, "throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 1048576}]},
    "network": {"classID": 1048577, "priorities": [{"name": "lo", "priority": 5}]},
    "hugepageLimits": [{"pageSize": "2MB", "limit": 4194304}]}
write("resources", c)
write("resources-only", c["linux"]["resources"])

c = copy.deepcopy(base)
c["linux"]["maskedPaths"] = ["/proc/uptime"]
c["linux"]["readonlyPaths"] = ["/proc/sys"]
c["linux"]["devices"] = [
    {"path": "/dev/mynull", "type": "c", "major": 1, "minor": 3, "fileMode": 0o620, "uid": 1, "gid": 2},
    {"path": "/dev/myloop", "type": "b", "major": 7, "minor": 0, "fileMode": 0o660},
    {"path": "/dev/myfifo", "type": "p", "fileMode": 0o640, "uid": 3}]
c["linux"]["resources"] = {"devices": [
    {"allow": False, "access": "rwm"},
    {"allow": True, "type": "c", "major": 1, "minor": 11, "access": "w"}]}
c["mounts"].append({"destination": "/vol", "type": "bind", "source": "/tmp", "options": ["rbind", "rw"]})
c["mounts"].append({"destination": "/scratch", "type": "tmpfs", "source": "tmpfs",
                    "options": ["nosuid", "size=1m", "mode=1777"]})
write("guestview", c)

c = copy.deepcopy(base)
caps = c["process"]["capabilities"]
for k in ("bounding", "effective", "permitted"):
    caps[k] = sorted(set(caps.get(k, [])) | {"CAP_DAC_OVERRIDE", "CAP_CHOWN"})
c["linux"]["namespaces"].append({"type": "user"})
c["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
c["linux"]["gidMappings"] = [{"containerID": 0, "hostID": 200000, "size": 65536}]
c["process"]["oomScoreAdj"] = 100
c["process"]["user"] = {"uid": 1000, "gid": 1000, "additionalGids": [5, 6], "umask": 18}
write("idmap", c)

c = copy.deepcopy(base)
c["linux"]["seccomp"] = {
    "defaultAction": "SCMP_ACT_ALLOW",
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "flags": ["SECCOMP_FILTER_FLAG_LOG"],
    "syscalls": [
        {"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
        {"names": ["personality"], "action": "SCMP_ACT_ERRNO", "errnoRet": 22,
         "args": [{"index": 0, "value": 255, "op": "SCMP_CMP_EQ"},
                  {"index": 1, "value": 7, "valueTwo": 3, "op": "SCMP_CMP_MASKED_EQ"}]},
        {"names": ["sync"], "action": "SCMP_ACT_KILL_PROCESS"},
        {"names": ["no_such_call_here"], "action": "SCMP_ACT_KILL"}]}
write("seccomp", c)

c = copy.deepcopy(base)
c["linux"]["sysctl"] = {"net.ipv4.ip_forward": "1", "kernel.shmmax": "65536"}
c["process"]["rlimits"] = [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 512},
                           {"type": "RLIMIT_NPROC", "hard": 100, "soft": 100}]
c["hooks"] = {"prestart": [{"path": "/bin/true", "args": ["true"], "env": ["A=b"], "timeout": 5}],
              "createRuntime": [{"path": "/bin/true"}],
              "poststop": [{"path": "/bin/true", "args": ["true", "x"]}]}
c["annotations"] = {"dev.husk.platform": "seccomp", "dev.husk.network": "none",
                    "dev.husk.egress-allow": "10.0.0.0/8"}
c["hostname"] = "fuzz"
c["process"]["terminal"] = False
c["process"]["noNewPrivileges"] = True
c["process"]["consoleSize"] = {"height": 24, "width": 80}
write("sysctl-hooks", c)
