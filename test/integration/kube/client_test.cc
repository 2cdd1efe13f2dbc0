// The client against a real kube-apiserver: CRUD of a custom resource, typed
// errors, server-side apply ownership, pagination and watch.

#include "kube/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "kube/http_server.h"
#include "kube/self_signed.h"
#include "kube/transport.h"
#include "support/testbed.h"

namespace caphv::kube {
namespace {

using testing::Eventually;
using testing::ScopedNamespace;
using testing::Testbed;

const GroupVersionResource kGadgets{"client.test.caphv.io", "v1", "gadgets", true};

// Installs a small CRD with a status subresource and a required field.
class ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto client = Testbed::Get().Client(testing::kMgmt);
    Object crd = Object::parse(R"({
      "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "gadgets.client.test.caphv.io"},
      "spec": {"group": "client.test.caphv.io", "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
        "versions": [{"name": "v1", "served": true, "storage": true,
          "subresources": {"status": {}},
          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
              "size": {"type": "integer", "minimum": 1},
              "color": {"type": "string"},
              "tags": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]}})");
    auto applied = client->Apply(resources::kCustomResourceDefinitions, "", crd);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
    ASSERT_TRUE(Eventually([&] {
      auto c =
          client->Get(resources::kCustomResourceDefinitions, "", "gadgets.client.test.caphv.io");
      if (!c.ok()) return false;
      for (const auto& cond : (*c)["status"].value("conditions", Object::array())) {
        if (cond.value("type", "") == "Established" && cond.value("status", "") == "True") {
          // Established can precede the REST handler by a moment.
          return client->List(kGadgets, "default").ok();
        }
      }
      return false;
    }));
  }

  static Object Gadget(const std::string& name, int size) {
    return {{"apiVersion", "client.test.caphv.io/v1"},
            {"kind", "Gadget"},
            {"metadata", {{"name", name}}},
            {"spec", {{"size", size}}}};
  }

  std::shared_ptr<Client> client_ = Testbed::Get().Client(testing::kMgmt);
};

TEST_F(ClientTest, ServerReportsTheBuiltVersion) {
  auto v = client_->GetPath("/version");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ((*v)["gitVersion"], "v1.33.13");
}

// Pooled connections go once idle for config().idle_connection_timeout
// (client-go's 90 s), whether the client is used again or only asked to tidy.
TEST_F(ClientTest, IdleConnectionsAreClosedAfterTheirTimeout) {
  RestConfig config = client_->config();
  auto fresh = Client::New(config);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_TRUE((*fresh)->GetPath("/version").ok());
  // Used a moment ago: kept for the next request.
  EXPECT_EQ((*fresh)->CloseIdleConnections(), 0u);
  ASSERT_TRUE((*fresh)->GetPath("/version").ok());

  config.idle_connection_timeout = std::chrono::milliseconds(0);
  auto eager = Client::New(config);
  ASSERT_TRUE(eager.ok()) << eager.status().ToString();
  // Two requests at once leave two connections in the pool.
  std::thread other([&] { EXPECT_TRUE((*eager)->GetPath("/version").ok()); });
  EXPECT_TRUE((*eager)->GetPath("/version").ok());
  other.join();
  const size_t closed = (*eager)->CloseIdleConnections();
  EXPECT_GE(closed, 1u);
  EXPECT_LE(closed, 2u);
  EXPECT_EQ((*eager)->CloseIdleConnections(), 0u);
  // A new connection is made when needed.
  EXPECT_TRUE((*eager)->GetPath("/version").ok());
}

TEST_F(ClientTest, CrudOfACustomResourceWithTypedErrors) {
  ScopedNamespace ns(client_, "crud");
  auto created = client_->Create(kGadgets, ns.name(), Gadget("g1", 3));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE(UidOf(*created).empty());

  auto again = client_->Create(kGadgets, ns.name(), Gadget("g1", 3));
  EXPECT_TRUE(again.status().IsAlreadyExists()) << again.status().ToString();

  auto got = client_->Get(kGadgets, ns.name(), "g1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["spec"]["size"], 3);

  // Update with the current resourceVersion succeeds; a stale one conflicts.
  Object stale = *got;
  (*got)["spec"]["color"] = "red";
  auto updated = client_->Update(kGadgets, ns.name(), *got);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  stale["spec"]["color"] = "blue";
  EXPECT_TRUE(client_->Update(kGadgets, ns.name(), stale).status().IsConflict());

  // Schema violations come back as Invalid with the field path.
  auto invalid = client_->Create(kGadgets, ns.name(), Gadget("g2", 0));
  ASSERT_TRUE(invalid.status().IsInvalid()) << invalid.status().ToString();
  ASSERT_FALSE(invalid.status().causes().empty());
  EXPECT_EQ(invalid.status().causes()[0].field, "spec.size");

  // Merge patch and JSON patch.
  auto merged = client_->Patch(kGadgets, ns.name(), "g1", PatchType::kMerge,
                               {{"spec", {{"tags", {{"a", "1"}}}}}});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ((*merged)["spec"]["tags"]["a"], "1");
  auto jsonp = client_->Patch(kGadgets, ns.name(), "g1", PatchType::kJson,
                              Object::parse(R"([{"op":"replace","path":"/spec/size","value":9}])"));
  ASSERT_TRUE(jsonp.ok()) << jsonp.status().ToString();
  EXPECT_EQ((*jsonp)["spec"]["size"], 9);

  // The status subresource: status writes ignore spec, main writes ignore status.
  Object with_status = *jsonp;
  with_status["status"] = {{"ready", true}};
  with_status["spec"]["size"] = 100;
  auto st = client_->UpdateStatus(kGadgets, ns.name(), with_status);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ((*st)["status"]["ready"], true);
  EXPECT_EQ((*st)["spec"]["size"], 9);

  // Delete with a wrong UID precondition conflicts; with the right one it goes.
  DeleteOptions wrong;
  wrong.precondition_uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_TRUE(client_->Delete(kGadgets, ns.name(), "g1", wrong).IsConflict());
  DeleteOptions right;
  right.precondition_uid = UidOf(*st);
  right.propagation_policy = "Background";
  ASSERT_TRUE(client_->Delete(kGadgets, ns.name(), "g1", right).ok());
  EXPECT_TRUE(client_->Get(kGadgets, ns.name(), "g1").status().IsNotFound());
  EXPECT_TRUE(client_->Delete(kGadgets, ns.name(), "g1").IsNotFound());
}

TEST_F(ClientTest, ServerSideApplyOwnershipAndConflicts) {
  ScopedNamespace ns(client_, "ssa");
  Object a = Gadget("shared", 2);
  a["metadata"]["namespace"] = ns.name();
  a["spec"]["color"] = "red";
  ApplyOptions as_a{.field_manager = "manager-a", .force = false};
  ASSERT_TRUE(client_->Apply(kGadgets, "", a, as_a).ok());

  // Another manager setting the same field to another value conflicts...
  Object b = Gadget("shared", 2);
  b["metadata"]["namespace"] = ns.name();
  b["spec"]["color"] = "blue";
  ApplyOptions as_b{.field_manager = "manager-b", .force = false};
  auto conflict = client_->Apply(kGadgets, "", b, as_b);
  ASSERT_TRUE(conflict.status().IsConflict()) << conflict.status().ToString();
  EXPECT_NE(conflict.status().ToString().find("manager-a"), std::string::npos);

  // ...unless it forces, which moves ownership of the field to it.
  as_b.force = true;
  auto forced = client_->Apply(kGadgets, "", b, as_b);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_EQ((*forced)["spec"]["color"], "blue");
  bool b_owns_color = false;
  for (const auto& mf : (*forced)["metadata"]["managedFields"]) {
    if (mf.value("manager", "") == "manager-b" && mf["fieldsV1"]["f:spec"].contains("f:color")) {
      b_owns_color = true;
    }
  }
  EXPECT_TRUE(b_owns_color);

  // A manager that stops applying a field it alone owns removes it.
  Object a2 = Gadget("shared", 2);
  a2["metadata"]["namespace"] = ns.name();
  a2["spec"]["tags"] = {{"k", "v"}};
  ASSERT_TRUE(client_->Apply(kGadgets, "", a2, as_a).ok());
  Object a3 = Gadget("shared", 2);
  a3["metadata"]["namespace"] = ns.name();
  auto pruned = client_->Apply(kGadgets, "", a3, as_a);
  ASSERT_TRUE(pruned.ok());
  EXPECT_FALSE((*pruned)["spec"].contains("tags"));
  EXPECT_EQ((*pruned)["spec"]["color"], "blue");  // still owned by manager-b

  // Status through SSA on the status subresource.
  Object s = {{"apiVersion", "client.test.caphv.io/v1"},
              {"kind", "Gadget"},
              {"metadata", {{"name", "shared"}, {"namespace", ns.name()}}},
              {"status", {{"ready", true}}}};
  auto status =
      client_->Apply(kGadgets, "", s, {.field_manager = "caphv", .subresource = "status"});
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ((*status)["status"]["ready"], true);
}

TEST_F(ClientTest, ListPaginatesOverTwoThousandObjects) {
  ScopedNamespace ns(client_, "paging");
  constexpr int kCount = 2000;
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([&] {
      for (int i = next++; i < kCount; i = next++) {
        Object cm = {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "cm-" + std::to_string(i)}}},
                     {"data", {{"i", std::to_string(i)}}}};
        if (!client_->Create(resources::kConfigMaps, ns.name(), cm).ok()) ++failures;
      }
    });
  }
  for (auto& w : writers) w.join();
  ASSERT_EQ(failures.load(), 0);

  auto first = client_->List(resources::kConfigMaps, ns.name(), {.limit = 500});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->items.size(), 500u);
  EXPECT_FALSE(first->continue_token.empty());

  auto all = client_->ListAll(resources::kConfigMaps, ns.name(), {}, 500);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::set<std::string> names;
  for (const auto& item : all->items) {
    names.insert(NameOf(item));
    EXPECT_EQ(item["kind"], "ConfigMap");
  }
  // kube-root-ca.crt is published into every namespace by the controller manager.
  names.erase("kube-root-ca.crt");
  EXPECT_EQ(names.size(), static_cast<size_t>(kCount));
  EXPECT_FALSE(all->resource_version.empty());

  auto selected = client_->ListAll(resources::kConfigMaps, ns.name(),
                                   {.field_selector = "metadata.name=cm-42"});
  ASSERT_TRUE(selected.ok());
  ASSERT_EQ(selected->items.size(), 1u);
}

TEST_F(ClientTest, WatchDeliversEventsFromAResourceVersion) {
  ScopedNamespace ns(client_, "watch");
  auto list = client_->List(kGadgets, ns.name());
  ASSERT_TRUE(list.ok());
  std::vector<std::pair<WatchEvent::Type, std::string>> seen;
  std::mutex mu;
  std::stop_source stop;
  std::thread watcher([&] {
    Status s = client_->Watch(
        kGadgets, ns.name(), {.resource_version = list->resource_version},
        [&](WatchEvent&& ev) {
          if (ev.type == WatchEvent::Type::kBookmark) return true;
          std::lock_guard lock(mu);
          seen.emplace_back(ev.type, NameOf(ev.object));
          return true;
        },
        stop.get_token());
    EXPECT_TRUE(s.IsCancelled() || s.ok()) << s.ToString();
  });
  ASSERT_TRUE(client_->Create(kGadgets, ns.name(), Gadget("w1", 1)).ok());
  ASSERT_TRUE(
      client_->Patch(kGadgets, ns.name(), "w1", PatchType::kMerge, {{"spec", {{"size", 2}}}}).ok());
  ASSERT_TRUE(client_->Delete(kGadgets, ns.name(), "w1").ok());
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard lock(mu);
    return seen.size() >= 3;
  }));
  stop.request_stop();
  watcher.join();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].first, WatchEvent::Type::kAdded);
  EXPECT_EQ(seen[1].first, WatchEvent::Type::kModified);
  EXPECT_EQ(seen[2].first, WatchEvent::Type::kDeleted);
}

// What an informer asks for: the objects without metadata.managedFields,
// which the apiserver always sends (an informer's cache never keeps them),
// or only the fields its mask keeps.
TEST_F(ClientTest, ListAndWatchBuildOnlyWhatTheirMaskKeeps) {
  static const FieldMask kSize({{"metadata", "name"},
                                {"metadata", "resourceVersion"},
                                {"metadata", "absent"},
                                {"spec", "size"}});
  ScopedNamespace ns(client_, "managed-fields");
  ASSERT_TRUE(client_->Create(kGadgets, ns.name(), Gadget("m1", 1)).ok());
  auto whole = client_->List(kGadgets, ns.name());
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_EQ(whole->items.size(), 1u);
  EXPECT_TRUE(whole->items[0]["metadata"].contains("managedFields"));
  auto lean = client_->List(kGadgets, ns.name(), {.keep = &FieldMask::WithoutManagedFields()});
  ASSERT_TRUE(lean.ok()) << lean.status().ToString();
  ASSERT_EQ(lean->items.size(), 1u);
  Object expected = whole->items[0];
  expected["metadata"].erase("managedFields");
  EXPECT_EQ(lean->items[0], expected);
  auto masked = client_->List(kGadgets, ns.name(), {.keep = &kSize});
  ASSERT_TRUE(masked.ok()) << masked.status().ToString();
  ASSERT_EQ(masked->items.size(), 1u);
  // The list's items get their apiVersion and kind back, as a mask keeps.
  expected = whole->items[0];
  kSize.Apply(expected);
  EXPECT_EQ(masked->items[0], expected);
  EXPECT_EQ(masked->items[0]["kind"], "Gadget");
  EXPECT_FALSE(masked->items[0]["metadata"].contains("uid"));
  EXPECT_FALSE(masked->items[0]["metadata"].contains("creationTimestamp"));

  // Three watches from the same point: whole, lean, masked.
  std::mutex mu;
  std::vector<Object> seen[3];
  std::stop_source stop;
  std::vector<std::thread> watchers;
  for (int i = 0; i < 3; ++i) {
    watchers.emplace_back([&, i] {
      WatchOptions o{.resource_version = whole->resource_version};
      if (i == 1) o.keep = &FieldMask::WithoutManagedFields();
      if (i == 2) o.keep = &kSize;
      Status s = client_->Watch(
          kGadgets, ns.name(), o,
          [&](WatchEvent&& ev) {
            if (ev.type != WatchEvent::Type::kModified) return true;
            std::lock_guard lock(mu);
            seen[i].push_back(std::move(ev.object));
            return true;
          },
          stop.get_token());
      EXPECT_TRUE(s.IsCancelled() || s.ok()) << s.ToString();
    });
  }
  ASSERT_TRUE(
      client_->Patch(kGadgets, ns.name(), "m1", PatchType::kMerge, {{"spec", {{"size", 2}}}}).ok());
  EXPECT_TRUE(Eventually([&] {
    std::lock_guard lock(mu);
    return !seen[0].empty() && !seen[1].empty() && !seen[2].empty();
  }));
  stop.request_stop();
  for (auto& w : watchers) w.join();
  ASSERT_FALSE(seen[0].empty());
  ASSERT_FALSE(seen[1].empty());
  EXPECT_TRUE(seen[0][0]["metadata"].contains("managedFields"));
  Object lean_event = seen[0][0];
  lean_event["metadata"].erase("managedFields");
  EXPECT_EQ(seen[1][0], lean_event);
  EXPECT_EQ(seen[1][0]["spec"]["size"], 2);
  Object masked_event = seen[0][0];
  kSize.Apply(masked_event);
  EXPECT_EQ(seen[2][0], masked_event);
  EXPECT_EQ(seen[2][0]["spec"], Object({{"size", 2}}));
}

TEST_F(ClientTest, UnreachableServerIsUnavailableAndBadTokenUnauthorized) {
  RestConfig cfg = Testbed::Get().Config(testing::kMgmt);
  RestConfig bad_token = cfg;
  bad_token.token = "not-a-token";
  auto c = Client::New(bad_token);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->List(resources::kNamespaces, "").status().code(), StatusCode::kUnauthorized);

  RestConfig wrong_ca = cfg;
  wrong_ca.ca_pem.clear();  // system roots do not trust the bed's CA
  auto c2 = Client::New(wrong_ca);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ((*c2)->List(resources::kNamespaces, "").status().code(), StatusCode::kUnavailable);
}

// tls-server-name names the certificate to expect (and the SNI), whatever
// address `server` has: the bed's certificates name localhost and 127.0.0.1.
TEST_F(ClientTest, TlsServerNameIsTheNameTheCertificateIsCheckedFor) {
  RestConfig cfg = Testbed::Get().Config(testing::kMgmt);
  RestConfig named = cfg;
  named.tls_server_name = "localhost";
  auto ok = Client::New(named);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE((*ok)->List(resources::kNamespaces, "").ok());

  RestConfig other = cfg;
  other.tls_server_name = "harvester.example";
  auto refused = Client::New(other);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ((*refused)->List(resources::kNamespaces, "").status().code(), StatusCode::kUnavailable);
}

// The server of an identity kubeconfig may be anyone's: an answer or a
// watch event beyond the caps fails the request instead of filling memory.
TEST(TransportLimitsTest, OversizedAnswersAndWatchEventsAreRefused) {
  auto pem = GenerateSelfSignedCertificate({"127.0.0.1"});
  ASSERT_TRUE(pem.ok());
  // Writing 128 MiB takes its time under the sanitizers: no write timeout.
  HttpServer server({.name = "huge",
                     .bind_address = "127.0.0.1:0",
                     .write_timeout = std::chrono::seconds(3600),
                     .cert_pem = pem->cert_pem,
                     .key_pem = pem->key_pem});
  server.Handle("/big", [](const HttpRequest&) {
    return HttpResponse{200, "application/json", std::string(kMaxResponseBytes + 1, ' ')};
  });
  server.Handle("/small", [](const HttpRequest&) {
    return HttpResponse{200, "application/json", "{}"};
  });
  server.Handle("/watch", [](const HttpRequest&) {
    return HttpResponse{200, "application/json", std::string(kMaxWatchEventBytes + 1, ' ')};
  });
  ASSERT_TRUE(server.Start().ok());
  RestConfig config;
  config.server = "https://" + server.address();
  config.ca_pem = pem->cert_pem;
  Transport transport(config);
  auto big = transport.Do("GET", "/big", "", "", std::chrono::minutes(10));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(big.status().message().find("passed 128 MiB"), std::string::npos)
      << big.status().message();
  auto small = transport.Do("GET", "/small", "", "");
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->body, "{}");
  std::stop_source stop;
  auto watch = transport.Stream(
      "/watch", [](std::string_view) { return true; }, stop.get_token(), std::chrono::seconds(30));
  ASSERT_FALSE(watch.ok());
  EXPECT_NE(watch.status().message().find("passed 64 MiB"), std::string::npos)
      << watch.status().message();
}

}  // namespace
}  // namespace caphv::kube
