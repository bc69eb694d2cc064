// The restricted Pod Security Standard (the baseline controls and the restricted ones, as
// https://kubernetes.io/docs/concepts/security/pod-security-standards/ states them for policy
// version v1.30), checked on a Pod object the way the PodSecurity admission plugin checks it in a
// namespace labelled pod-security.kubernetes.io/enforce=restricted. Each violation names the
// field. Windows-only and AppArmor annotation controls are included; nothing is left to
// judgement.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl::controller::testing {

inline std::vector<std::string> restricted_violations(const nlohmann::json& pod) {
  using nlohmann::json;
  std::vector<std::string> out;
  const json spec = pod.value("spec", json::object());
  const json psc = spec.value("securityContext", json::object());
  auto is_true = [](const json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key] == true;
  };
  // Host namespaces and host process.
  for (const char* field : {"hostNetwork", "hostPID", "hostIPC"}) {
    if (is_true(spec, field)) out.push_back(std::string("spec.") + field + ": must not be true");
  }
  if (is_true(psc.value("windowsOptions", json::object()), "hostProcess"))
    out.push_back("spec.securityContext.windowsOptions.hostProcess: must not be true");
  // Volume types.
  const std::set<std::string> allowed_volumes = {"configMap", "csi",       "downwardAPI",
                                                 "emptyDir",  "ephemeral", "persistentVolumeClaim",
                                                 "projected", "secret"};
  for (const auto& volume : spec.value("volumes", json::array())) {
    for (const auto& [key, value] : volume.items()) {
      if (key == "name") continue;
      if (!allowed_volumes.count(key))
        out.push_back("spec.volumes[" + volume.value("name", "") + "]." + key + ": not allowed");
    }
  }
  // Sysctls: the safe set only.
  const std::set<std::string> safe_sysctls = {"kernel.shm_rmid_forced",
                                              "net.ipv4.ip_local_port_range",
                                              "net.ipv4.ip_unprivileged_port_start",
                                              "net.ipv4.tcp_syncookies",
                                              "net.ipv4.ping_group_range",
                                              "net.ipv4.ip_local_reserved_ports",
                                              "net.ipv4.tcp_keepalive_time",
                                              "net.ipv4.tcp_fin_timeout",
                                              "net.ipv4.tcp_keepalive_intvl",
                                              "net.ipv4.tcp_keepalive_probes"};
  for (const auto& s : psc.value("sysctls", json::array())) {
    if (!safe_sysctls.count(s.value("name", "")))
      out.push_back("spec.securityContext.sysctls: " + s.value("name", "") + " is not safe");
  }
  // AppArmor annotations.
  const json annotations =
      pod.value("metadata", json::object()).value("annotations", json::object());
  for (const auto& [key, value] : annotations.items()) {
    if (key.rfind("container.apparmor.security.beta.kubernetes.io/", 0) != 0) continue;
    const std::string v = value.is_string() ? value.get<std::string>() : "";
    if (v != "runtime/default" && v.rfind("localhost/", 0) != 0)
      out.push_back("metadata.annotations." + key + ": must be runtime/default or localhost/*");
  }
  const auto seccomp_ok = [](const json& sc) {
    const std::string type =
        sc.value("seccompProfile", json::object()).value("type", std::string());
    return type == "RuntimeDefault" || type == "Localhost";
  };
  const auto seccomp_unconfined = [](const json& sc) {
    return sc.value("seccompProfile", json::object()).value("type", std::string()) == "Unconfined";
  };
  const std::set<std::string> selinux_types = {"", "container_t", "container_init_t",
                                               "container_kvm_t", "container_engine_t"};
  const auto selinux_ok = [&](const json& sc) {
    const json o = sc.value("seLinuxOptions", json::object());
    return selinux_types.count(o.value("type", std::string())) && !o.contains("user") &&
           !o.contains("role");
  };
  if (!selinux_ok(psc)) out.push_back("spec.securityContext.seLinuxOptions: not allowed");
  if (psc.contains("runAsUser") && psc["runAsUser"] == 0)
    out.push_back("spec.securityContext.runAsUser: must not be 0");
  if (seccomp_unconfined(psc))
    out.push_back("spec.securityContext.seccompProfile.type: must not be Unconfined");
  const bool pod_non_root = is_true(psc, "runAsNonRoot");
  const bool pod_seccomp = seccomp_ok(psc);
  const std::set<std::string> baseline_caps = {
      "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
      "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    for (const auto& c : spec.value(list, json::array())) {
      const std::string at = std::string("spec.") + list + "[" + c.value("name", "") + "]";
      const json sc = c.value("securityContext", json::object());
      if (is_true(sc, "privileged")) out.push_back(at + ".securityContext.privileged: not allowed");
      if (is_true(sc.value("windowsOptions", json::object()), "hostProcess"))
        out.push_back(at + ".securityContext.windowsOptions.hostProcess: not allowed");
      if (sc.value("procMount", std::string("Default")) != "Default")
        out.push_back(at + ".securityContext.procMount: must be Default");
      if (!selinux_ok(sc)) out.push_back(at + ".securityContext.seLinuxOptions: not allowed");
      for (const auto& port : c.value("ports", json::array())) {
        if (port.value("hostPort", 0) != 0) out.push_back(at + ".ports[].hostPort: not allowed");
      }
      if (!(sc.contains("allowPrivilegeEscalation") && sc["allowPrivilegeEscalation"] == false))
        out.push_back(at + ".securityContext.allowPrivilegeEscalation: must be false");
      const bool non_root = sc.contains("runAsNonRoot") ? sc["runAsNonRoot"] == true : pod_non_root;
      if (!non_root) out.push_back(at + ".securityContext.runAsNonRoot: must be true");
      if (sc.contains("runAsUser") && sc["runAsUser"] == 0)
        out.push_back(at + ".securityContext.runAsUser: must not be 0");
      if (seccomp_unconfined(sc))
        out.push_back(at + ".securityContext.seccompProfile.type: must not be Unconfined");
      if (!pod_seccomp && !seccomp_ok(sc))
        out.push_back(at +
                      ".securityContext.seccompProfile.type: must be RuntimeDefault or "
                      "Localhost (here or on the pod)");
      const json caps = sc.value("capabilities", json::object());
      bool drops_all = false;
      for (const auto& d : caps.value("drop", json::array())) drops_all = drops_all || d == "ALL";
      if (!drops_all) out.push_back(at + ".securityContext.capabilities.drop: must include ALL");
      for (const auto& a : caps.value("add", json::array())) {
        const std::string cap = a.is_string() ? a.get<std::string>() : "";
        if (cap != "NET_BIND_SERVICE" || !baseline_caps.count(cap))
          out.push_back(at + ".securityContext.capabilities.add: " + cap + " not allowed");
      }
    }
  }
  return out;
}

}  // namespace depl::controller::testing
