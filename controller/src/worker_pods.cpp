#include "depl/controller/worker_pods.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "depl/controller/trainer_progress.hpp"
#include "depl/solver/evaluator.hpp"

namespace depl::controller {
namespace {

using nlohmann::json;

json env_value(const std::string& name, const std::string& value) {
  return json{{"name", name}, {"value", value}};
}

const json& spec_of(const json& job) {
  static const json kEmpty = json::object();
  auto it = job.find("spec");
  return it != job.end() && it->is_object() ? *it : kEmpty;
}

// The spec entry of a model (for its resources and env), or an empty object.
const json& model_spec(const json& job, const std::string& name) {
  static const json kEmpty = json::object();
  const json& spec = spec_of(job);
  auto models = spec.find("models");
  if (models == spec.end() || !models->is_array()) return kEmpty;
  for (const auto& m : *models) {
    if (m.is_object() && m.value("name", "") == name) return m;
  }
  return kEmpty;
}

std::string job_name(const json& job) {
  return job["metadata"].value("name", "");
}
std::string job_namespace(const json& job) {
  return job["metadata"].value("namespace", "default");
}

json common_labels(const json& job, std::size_t phase) {
  return json{{kJobLabel, job_name(job)},
              {kPhaseLabel, std::to_string(phase)},
              {kManagedByLabel, kManagedByValue}};
}

json loss_profile_json(const solver::LossProfile& lp) {
  return json{{"initialLoss", lp.initial_loss},           {"floorLoss", lp.floor_loss},
              {"decayPerEpoch", lp.decay_per_epoch},      {"noiseStddev", lp.noise_stddev},
              {"validationNoiseStddev", lp.validation_noise_stddev},
              {"initialLossStddev", lp.initial_stddev},
              {"referenceSamples", lp.reference_samples}, {"dataExponent", lp.data_exponent},
              {"labelNoiseFloor", lp.label_noise_floor}};
}

// The loss profile the plan assumed for this phase, with the effective samples per epoch (E),
// the share of wrong labels in the selection (W / N) and, when the phase starts with a switch, the
// switch's loss jump.
json assumed_profile(const PhaseLaunch& launch, const solver::ModelVariant& model) {
  json profile = loss_profile_json(model.loss);
  profile["effectiveSamples"] = solver::effective_samples(*launch.problem, launch.plan->datasets);
  profile["wrongLabelShare"] = solver::wrong_label_share(*launch.problem, launch.plan->datasets);
  if (launch.phase > 0) {
    const auto& previous =
        launch.problem->models.at(launch.plan->phases.at(launch.phase - 1).model);
    if (previous.name != model.name) {
      if (const auto* sw = launch.problem->find_switch(previous.name, model.name)) {
        profile["switchJump"] = {
            {"from", previous.name}, {"mean", sw->jump_mean}, {"stddev", sw->jump_stddev}};
      }
    }
  }
  return profile;
}

// The volumes of a worker pod and where its container mounts them: each dataset the plan uses
// whose source is a PVC (read-only, at /data/<name>) and the checkpoint PVC; datasets given by URI
// are passed on as "<name>=<uri>,...".
struct DataVolumes {
  std::string datasets;  // the plan's datasets, "a,b"
  std::string dataset_uris;
  json volumes = json::array();
  json mounts = json::array();
};

DataVolumes data_volumes(const PhaseLaunch& launch) {
  DataVolumes out;
  const json& spec = spec_of(*launch.job);
  const json* sources = nullptr;
  if (auto list = spec.find("datasets"); list != spec.end() && list->is_array()) sources = &*list;
  for (std::size_t di : launch.plan->datasets) {
    const solver::Dataset& d = launch.problem->datasets.at(di);
    if (!out.datasets.empty()) out.datasets += ",";
    out.datasets += d.name;
    if (sources == nullptr) continue;
    for (const auto& ds : *sources) {
      if (!ds.is_object() || ds.value("name", "") != d.name) continue;
      auto source = ds.find("source");
      if (source == ds.end() || !source->is_object()) continue;
      if (source->contains("pvc") && (*source)["pvc"].is_string()) {
        const std::string volume = fmt::format("data-{}", out.volumes.size());
        out.volumes.push_back(
            {{"name", volume},
             {"persistentVolumeClaim", {{"claimName", (*source)["pvc"]}, {"readOnly", true}}}});
        out.mounts.push_back(
            {{"name", volume}, {"mountPath", "/data/" + d.name}, {"readOnly", true}});
      }
      if (source->contains("uri") && (*source)["uri"].is_string()) {
        if (!out.dataset_uris.empty()) out.dataset_uris += ",";
        out.dataset_uris += d.name + "=" + (*source)["uri"].get<std::string>();
      }
    }
  }
  if (auto c = spec.find("checkpoint");
      c != spec.end() && c->is_object() && c->contains("pvc") && (*c)["pvc"].is_string()) {
    out.volumes.push_back(
        {{"name", "checkpoint"}, {"persistentVolumeClaim", {{"claimName", (*c)["pvc"]}}}});
    out.mounts.push_back({{"name", "checkpoint"}, {"mountPath", c->value("path", "/checkpoints")}});
  }
  // The progress token as a file too, for callbacks written for Kubeflow Trainer, which read it
  // from the file KUBEFLOW_TRAINER_SERVER_TOKEN names.
  out.volumes.push_back({{"name", "progress-token"},
                         {"secret",
                          {{"secretName", launch.token_secret},
                           {"items", json::array({{{"key", kTokenKey}, {"path", kTokenKey}}})}}}});
  out.mounts.push_back(
      {{"name", "progress-token"}, {"mountPath", kProgressTokenDir}, {"readOnly", true}});
  return out;
}

// The worker contract's environment (docs/worker-contract.md), then the model's own variables.
json worker_env(const PhaseLaunch& launch, int rank, const solver::ModelVariant& model,
                const DataVolumes& data) {
  const json& job = *launch.job;
  const std::string name = job_name(job);
  const std::string ns = job_namespace(job);
  const solver::Phase& phase = launch.plan->phases.at(launch.phase);
  const int port = rendezvous_port(job["metadata"].value("uid", ""), launch.phase);
  const std::string master =
      launch.rendezvous == RendezvousMode::Loopback
          ? std::string("127.0.0.1")
          : fmt::format("{}.{}.{}.svc", worker_pod_name(name, launch.phase, 0),
                        rendezvous_service_name(name, launch.phase), ns);
  json env = json::array({
      env_value("DEPL_JOB", name),
      env_value("DEPL_NAMESPACE", ns),
      env_value("DEPL_PHASE", std::to_string(launch.phase)),
      env_value("DEPL_MODEL", model.name),
      env_value("DEPL_EPOCHS", std::to_string(launch.epochs)),
      env_value("DEPL_START_EPOCH", std::to_string(launch.start_epoch)),
      env_value("DEPL_DATASETS", data.datasets),
      env_value("DEPL_CHECKPOINT_DIR", checkpoint_dir(job, launch.checkpoint_root)),
      env_value("DEPL_PROGRESS_URL",
                fmt::format("{}/v1/namespaces/{}/jobs/{}/progress", launch.progress_url, ns, name)),
      json{{"name", "DEPL_PROGRESS_TOKEN"},
           {"valueFrom", {{"secretKeyRef", {{"name", launch.token_secret}, {"key", kTokenKey}}}}}},
      env_value(kTrainerServerUrlEnv,
                trainer_status_url(launch.progress_url, ns, name, launch.phase, rank)),
      env_value(kTrainerServerTokenEnv, fmt::format("{}/{}", kProgressTokenDir, kTokenKey)),
      env_value("DEPL_LOSS_PROFILE", assumed_profile(launch, model).dump()),
      env_value("WORLD_SIZE", std::to_string(phase.workers)),
      env_value("RANK", std::to_string(rank)),
      env_value("MASTER_ADDR", master),
      env_value("MASTER_PORT", std::to_string(port)),
  });
  if (!data.dataset_uris.empty()) {
    env.push_back(env_value("DEPL_DATASET_URIS", data.dataset_uris));
  }
  const json& mspec = model_spec(job, model.name);
  if (auto extra = mspec.find("env"); extra != mspec.end() && extra->is_array()) {
    for (const auto& e : *extra) {
      if (e.is_object() && e.contains("name")) env.push_back(e);
    }
  }
  return env;
}

// The model's resources, with its GPUs per worker as both request and limit.
json worker_resources(const json& spec_entry, const solver::ModelVariant& model) {
  json resources = json::object();
  if (auto r = spec_entry.find("resources"); r != spec_entry.end() && r->is_object()) {
    resources = *r;
  }
  resources["limits"]["nvidia.com/gpu"] = std::to_string(model.gpus_per_worker);
  resources["requests"]["nvidia.com/gpu"] = std::to_string(model.gpus_per_worker);
  return resources;
}

// Puts the pod on the phase's pool (`pool_label` = its name) with the job's pod template: its
// node selector, tolerations (after the one for GPU nodes, followed by `pool_tolerations`, those
// of the pool's spot taints) and service account.
void place_on_pool(json& pod_spec, const json& job, const std::string& pool_label,
                   const solver::Pool& pool, const json& pool_tolerations) {
  const json& spec = spec_of(job);
  json node_selector = json::object();
  json tolerations =
      json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  std::string service_account;
  if (auto t = spec.find("podTemplate"); t != spec.end() && t->is_object()) {
    if (auto ns_sel = t->find("nodeSelector"); ns_sel != t->end() && ns_sel->is_object()) {
      node_selector = *ns_sel;
    }
    if (auto tol = t->find("tolerations"); tol != t->end() && tol->is_array()) {
      for (const auto& x : *tol) tolerations.push_back(x);
    }
    service_account = t->value("serviceAccountName", "");
  }
  node_selector[pool_label] = pool.name;
  for (const auto& x : pool_tolerations) tolerations.push_back(x);
  pod_spec["nodeSelector"] = node_selector;
  pod_spec["tolerations"] = tolerations;
  // The namespace's default ServiceAccount unless the job names one its policy allows; a worker
  // needs no API token unless a job asks for an account for it.
  if (service_account.empty()) {
    pod_spec["automountServiceAccountToken"] = false;
  } else {
    pod_spec["serviceAccountName"] = service_account;
  }
}

}  // namespace

json restricted_pod_security() {
  return json{{"runAsNonRoot", true},
              {"runAsUser", kWorkerUid},
              {"runAsGroup", kWorkerUid},
              {"fsGroup", kWorkerUid},
              {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

json restricted_container_security() {
  return json{{"allowPrivilegeEscalation", false},
              {"capabilities", {{"drop", json::array({"ALL"})}}},
              {"runAsNonRoot", true},
              {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

std::string worker_pod_name(const std::string& job, std::size_t phase, int rank) {
  return fmt::format("{}-p{}-w{}", job, phase, rank);
}

std::string rendezvous_service_name(const std::string& job, std::size_t phase) {
  return fmt::format("{}-p{}", job, phase);
}

std::string checkpoint_dir(const json& job, const std::string& checkpoint_root) {
  std::string root = checkpoint_root;
  if (root.empty()) {
    const json& spec = spec_of(job);
    root = "/checkpoints";
    if (auto c = spec.find("checkpoint"); c != spec.end() && c->is_object()) {
      root = c->value("path", root);
    }
  }
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  // The job's UID keeps a job re-created under the same name from resuming the checkpoints of
  // the one deleted before it. UIDs are the API server's (RFC 4122 text); anything else is kept
  // out of the path.
  std::string uid = job["metadata"].value("uid", "");
  const bool plain =
      !uid.empty() && uid.size() <= 64 && std::all_of(uid.begin(), uid.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
      });
  if (!plain) uid = fmt::format("{:016x}", std::hash<std::string>{}(uid));
  return fmt::format("{}/{}/{}/{}", root, job_namespace(job), job_name(job), uid);
}

int rendezvous_port(const std::string& job_uid, std::size_t phase) {
  // FNV-1a over the uid and phase: stable across controller restarts.
  std::uint64_t h = 1469598103934665603ull;
  for (char c : job_uid + "/" + std::to_string(phase)) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return kRendezvousPortFirst + static_cast<int>(h % (kRendezvousPortEnd - kRendezvousPortFirst));
}

json owner_reference(const json& job) {
  return json{{"apiVersion", job.value("apiVersion", "depl.dev/v1alpha1")},
              {"kind", job.value("kind", "DependableTrainingJob")},
              {"name", job_name(job)},
              {"uid", job["metadata"].value("uid", "")},
              {"controller", true},
              {"blockOwnerDeletion", true}};
}

json build_rendezvous_service(const PhaseLaunch& launch) {
  const json& job = *launch.job;
  const std::string name = rendezvous_service_name(job_name(job), launch.phase);
  const int port = rendezvous_port(job["metadata"].value("uid", ""), launch.phase);
  return json{
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata",
       {{"name", name},
        {"namespace", job_namespace(job)},
        {"labels", common_labels(job, launch.phase)},
        {"ownerReferences", json::array({owner_reference(job)})}}},
      {"spec",
       {{"clusterIP", "None"},
        {"selector", {{kJobLabel, job_name(job)}, {kPhaseLabel, std::to_string(launch.phase)}}},
        {"ports", json::array({{{"name", "rendezvous"}, {"port", port}, {"protocol", "TCP"}}})},
        {"publishNotReadyAddresses", true}}}};
}

int termination_grace_seconds(const solver::ModelVariant& model, const solver::Pool& pool) {
  double write = 0;
  if (model.checkpoint_bytes > 0 && pool.storage_bandwidth > 0) {
    write = model.checkpoint_bytes / pool.storage_bandwidth;
  }
  const double grace = kBaseGraceSeconds + std::ceil(2 * write);
  if (!(grace < kMaxGraceSeconds)) return kMaxGraceSeconds;
  return static_cast<int>(grace);
}

json build_worker_pod(const PhaseLaunch& launch, int rank) {
  const json& job = *launch.job;
  const solver::Phase& phase = launch.plan->phases.at(launch.phase);
  const solver::ModelVariant& model = launch.problem->models.at(phase.model);
  const solver::Pool& pool = launch.problem->pools.at(phase.pool);
  const std::string name = job_name(job);
  const std::string pod_name = worker_pod_name(name, launch.phase, rank);
  const json& mspec = model_spec(job, model.name);
  const int port = rendezvous_port(job["metadata"].value("uid", ""), launch.phase);
  const DataVolumes data = data_volumes(launch);

  json labels = common_labels(job, launch.phase);
  labels[kRankLabel] = std::to_string(rank);
  json container = {{"name", "worker"},
                    {"image", model.image},
                    {"env", worker_env(launch, rank, model, data)},
                    {"resources", worker_resources(mspec, model)},
                    {"ports", json::array({{{"name", "rendezvous"}, {"containerPort", port}}})},
                    {"securityContext", restricted_container_security()}};
  if (!data.mounts.empty()) container["volumeMounts"] = data.mounts;
  json pod_spec = {{"restartPolicy", "Never"},
                   {"hostname", pod_name},
                   {"subdomain", rendezvous_service_name(name, launch.phase)},
                   {"securityContext", restricted_pod_security()},
                   {"terminationGracePeriodSeconds", termination_grace_seconds(model, pool)},
                   {"containers", json::array({container})}};
  place_on_pool(pod_spec, job, launch.pool_label, pool, launch.pool_tolerations);
  if (!data.volumes.empty()) pod_spec["volumes"] = data.volumes;
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", pod_name},
                {"namespace", job_namespace(job)},
                {"labels", labels},
                {"annotations",
                 {{"depl.dev/pool", pool.name},
                  {"depl.dev/epochs", std::to_string(launch.epochs)},
                  {"depl.dev/start-epoch", std::to_string(launch.start_epoch)}}},
                {"ownerReferences", json::array({owner_reference(job)})}}},
              {"spec", pod_spec}};
}

}  // namespace depl::controller
