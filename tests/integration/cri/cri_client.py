"""A small CRI client, calling containerd's CRI plugin over its gRPC socket as kubelet does.

The stubs are generated at run time (protoc + grpc_python_plugin) from api.proto beside this
file into a directory the caller names, so nothing generated is kept in the tree.

    cri = Cri(socket_path, gen_dir)
    pod = cri.run_pod("web", "runc", log_dir, cgroup_parent)
    cid = cri.create(pod, "server", ["/bin/sh", "-c", "..."], ...)
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Poll budgets and waits are multiplied by HUSK_TIMEOUT_SCALE (a slower machine: 2, 3...).
SCALE = float(os.environ.get("HUSK_TIMEOUT_SCALE", "1") or 1)
IMAGE_BUSYBOX = "husk.test/busybox:1"


def generate(gen_dir):
    """Compiles api.proto into GEN_DIR (api_pb2.py, api_pb2_grpc.py) and imports them."""
    os.makedirs(gen_dir, exist_ok=True)
    if not os.path.exists(os.path.join(gen_dir, "api_pb2_grpc.py")):
        plugin = subprocess.run(["sh", "-c", "command -v grpc_python_plugin"],
                                capture_output=True, text=True).stdout.strip()
        subprocess.run(["protoc", "-I", HERE, "--python_out=" + gen_dir,
                        "--grpc_out=" + gen_dir, "--plugin=protoc-gen-grpc=" + plugin,
                        os.path.join(HERE, "api.proto")], check=True)
    sys.path.insert(0, gen_dir)
    import api_pb2  # noqa: E402
    import api_pb2_grpc  # noqa: E402
    return api_pb2, api_pb2_grpc


class Cri:
    def __init__(self, socket_path, gen_dir):
        import grpc
        self.grpc = grpc
        self.pb, pbg = generate(gen_dir)
        self.channel = grpc.insecure_channel("unix://" + socket_path)
        self.rt = pbg.RuntimeServiceStub(self.channel)
        self.img = pbg.ImageServiceStub(self.channel)
        self.sandbox_configs = {}

    def call(self, method, request, timeout=60):
        """RuntimeService.METHOD(REQUEST) with a deadline of TIMEOUT (scaled) seconds."""
        return getattr(self.rt, method)(request, timeout=timeout * SCALE)

    # --- pods ---
    def pod_config(self, name, log_dir, cgroup_parent, pid=None, network=None, annotations=None):
        pb = self.pb
        ns = pb.NamespaceOption(network=network if network is not None else pb.POD,
                                pid=pid if pid is not None else pb.CONTAINER, ipc=pb.POD)
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid="uid-" + name, namespace="default"),
            # kubelet gives a hostNetwork pod no hostname: it keeps the node's
            hostname="" if network == pb.NODE else name, log_directory=log_dir,
            annotations=annotations or {},
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=cgroup_parent,
                security_context=pb.LinuxSandboxSecurityContext(namespace_options=ns)))

    def run_pod(self, config, handler):
        """RunPodSandbox: returns the pod's id."""
        r = self.call("RunPodSandbox", self.pb.RunPodSandboxRequest(config=config,
                                                                     runtime_handler=handler))
        self.sandbox_configs[r.pod_sandbox_id] = config
        return r.pod_sandbox_id

    def pod_status(self, pod, verbose=False):
        return self.call("PodSandboxStatus",
                         self.pb.PodSandboxStatusRequest(pod_sandbox_id=pod, verbose=verbose))

    def stop_pod(self, pod):
        self.call("StopPodSandbox", self.pb.StopPodSandboxRequest(pod_sandbox_id=pod))

    def remove_pod(self, pod):
        self.call("RemovePodSandbox", self.pb.RemovePodSandboxRequest(pod_sandbox_id=pod))

    # --- containers ---
    def create(self, pod, name, command, memory=0, pid=None, tty=False, stdin=False):
        """CreateContainer of the busybox image in POD running COMMAND; its log is
        NAME.log in the pod's log directory. Returns the container's id."""
        pb = self.pb
        ns = pb.NamespaceOption(network=pb.POD, pid=pid if pid is not None else pb.CONTAINER,
                                ipc=pb.POD)
        config = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name), image=pb.ImageSpec(image=IMAGE_BUSYBOX),
            command=command, log_path=name + ".log", tty=tty, stdin=stdin,
            linux=pb.LinuxContainerConfig(
                resources=pb.LinuxContainerResources(memory_limit_in_bytes=memory),
                security_context=pb.LinuxContainerSecurityContext(namespace_options=ns)))
        r = self.call("CreateContainer", pb.CreateContainerRequest(
            pod_sandbox_id=pod, config=config, sandbox_config=self.sandbox_configs[pod]))
        return r.container_id

    def start(self, cid, timeout=60):
        self.call("StartContainer", self.pb.StartContainerRequest(container_id=cid), timeout)

    def status(self, cid):
        return self.call("ContainerStatus",
                         self.pb.ContainerStatusRequest(container_id=cid)).status

    def state_name(self, cid):
        return self.pb.ContainerState.Name(self.status(cid).state)

    def wait_state(self, cid, state, budget=30):
        """Polls ContainerStatus until the state is STATE (a name) or BUDGET (scaled) seconds
        passed; returns the last status."""
        end = time.monotonic() + budget * SCALE
        while True:
            st = self.status(cid)
            if self.pb.ContainerState.Name(st.state) == state or time.monotonic() > end:
                return st
            time.sleep(0.1)

    def stop(self, cid, timeout=10):
        self.call("StopContainer", self.pb.StopContainerRequest(container_id=cid,
                                                                timeout=timeout))

    def remove(self, cid):
        self.call("RemoveContainer", self.pb.RemoveContainerRequest(container_id=cid))

    def exec_sync(self, cid, cmd, timeout=0, deadline=60):
        """ExecSync: (exit code, stdout, stderr) as text."""
        r = self.call("ExecSync", self.pb.ExecSyncRequest(container_id=cid, cmd=cmd,
                                                          timeout=timeout), deadline)
        return r.exit_code, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")

    def stats(self, cid):
        return self.call("ContainerStats",
                         self.pb.ContainerStatsRequest(container_id=cid)).stats

    def update_memory(self, cid, limit):
        self.call("UpdateContainerResources", self.pb.UpdateContainerResourcesRequest(
            container_id=cid, linux=self.pb.LinuxContainerResources(
                memory_limit_in_bytes=limit)))

    def image_present(self, ref):
        r = self.img.ImageStatus(self.pb.ImageStatusRequest(image=self.pb.ImageSpec(image=ref)),
                                 timeout=30 * SCALE)
        return r.image.id != ""
