// Package capie2e runs Cluster API's own end-to-end specs
// (sigs.k8s.io/cluster-api/test/e2e, the same release as the bed's Cluster
// API core) against the CAPHV test bed, with CAPHV as the infrastructure
// provider "harvester" and the RKE2 bootstrap and control-plane providers.
// The specs run unmodified; this package only gives them their inputs:
//
//   - the management cluster: the bed's mgmt apiserver, as an existing-cluster
//     ClusterProxy (no kind, no docker);
//   - a clusterctl local repository for "harvester" (config/caphv.yaml, the
//     templates in data/ and the project's ClusterClass harvester-rke2), which
//     the specs' `clusterctl generate cluster` reads;
//   - caphv-manager from the build tree, watching every namespace (the specs
//     make a namespace each), its log in <artifacts>/caphv-manager.log;
//   - a Harvester IPPool for the machines' addresses, and the kubeconfigs of
//     the bed's Harvester and workload apiservers as template variables;
//   - control-plane waiters for RKE2ControlPlane (waiters_test.go): the
//     framework's defaults know only KubeadmControlPlane.
//
// Built once into the test binary cache by hack/build-testbins.sh capi-e2e and run by
// the ctest test capi_e2e (hack/capi-e2e.sh); docs/testbed.md ("Cluster API's
// end-to-end specs") says how to run it by hand. Flags (after the binary):
//
//	-caphv.testbed DIR   the bed (default $CAPHV_TESTBED)
//	-caphv.source DIR    the checkout (default $CAPHV_SOURCE_DIR)
//	-caphv.build DIR     the build tree with cmd/caphv-manager (default $CAPHV_BUILD_DIR)
//	-e2e.artifacts DIR   where logs, dumps and the repository go
//	-e2e.skip-cleanup    keep the clusters of the specs
//
// The bed has one workload apiserver: the specs run one after the other, and
// before each the suite waits until the previous cluster's RKE2 state has left
// it (BeforeEach in specs_test.go).
package capie2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/cluster-api/test/framework"
	"sigs.k8s.io/cluster-api/test/framework/clusterctl"
)

var (
	testbedDir     = flag.String("caphv.testbed", os.Getenv("CAPHV_TESTBED"), "test bed directory")
	sourceDir      = flag.String("caphv.source", os.Getenv("CAPHV_SOURCE_DIR"), "CAPHV checkout")
	buildDir       = flag.String("caphv.build", os.Getenv("CAPHV_BUILD_DIR"), "CAPHV build tree")
	artifactFolder = flag.String("e2e.artifacts", "", "artifacts folder (default <testbed>/logs/capi-e2e)")
	skipCleanup    = flag.Bool("e2e.skip-cleanup", false, "keep the clusters the specs create")
)

// What the specs get (set in BeforeSuite).
var (
	ctx                  = context.Background()
	e2eConfig            *clusterctl.E2EConfig
	clusterctlConfigPath string
	mgmtProxy            framework.ClusterProxy
	workloadProxy        framework.ClusterProxy
	harvesterProxy       framework.ClusterProxy
	manager              *exec.Cmd
)

// The IPPool of the machines' addresses on Harvester: a /24 of its own.
const (
	poolName   = "capi-e2e"
	poolPrefix = "172.20.253."
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "caphv-capi-e2e")
}

var _ = BeforeSuite(func() {
	Expect(*testbedDir).NotTo(BeEmpty(), "no test bed: set CAPHV_TESTBED or -caphv.testbed")
	Expect(*sourceDir).NotTo(BeEmpty(), "no checkout: set CAPHV_SOURCE_DIR or -caphv.source")
	Expect(*buildDir).NotTo(BeEmpty(), "no build tree: set CAPHV_BUILD_DIR or -caphv.build")
	bedEnv := readBedEnv(filepath.Join(*testbedDir, "env"))
	if bedEnv["WITH_RKE2"] != "1" {
		Skip("the test bed runs without the RKE2 providers (hack/testbed up --with-rke2)")
	}
	if *artifactFolder == "" {
		*artifactFolder = filepath.Join(*testbedDir, "logs", "capi-e2e")
	}
	Expect(os.MkdirAll(*artifactFolder, 0o750)).To(Succeed())

	scheme := runtime.NewScheme()
	framework.TryAddDefaultSchemes(scheme)
	kubeconfig := func(name string) string { return filepath.Join(*testbedDir, name+".kubeconfig") }
	mgmtProxy = framework.NewClusterProxy("mgmt", kubeconfig("mgmt"), scheme)
	workloadProxy = framework.NewClusterProxy("workload", kubeconfig("workload"), scheme)
	harvesterProxy = framework.NewClusterProxy("harvester", kubeconfig("harvester"), scheme)

	By("Applying CAPHV's CRDs to the management cluster")
	crds := filepath.Join(*sourceDir, "config", "crd", "bases")
	kubectl("apply", "--server-side", "--force-conflicts", "-f", crds)
	kubectl("wait", "--for", "condition=established", "--timeout=60s", "-f", crds)

	By("Creating the IPPool of the machines on Harvester")
	createPool()

	By("Writing the clusterctl local repository")
	e2eConfig = loadConfig(filepath.Join(*sourceDir, "test", "capi-e2e", "config", "caphv.yaml"))
	e2eConfig.Variables["WORKLOAD_KUBECONFIG_B64"] = base64File(kubeconfig("workload"))
	e2eConfig.Variables["HARVESTER_KUBECONFIG_B64"] = base64File(kubeconfig("harvester"))
	e2eConfig.Variables["IP_POOL"] = poolName
	e2eConfig.Variables["IP_GATEWAY"] = poolPrefix + "1"
	prepareRepositorySources(e2eConfig)
	clusterctlConfigPath = clusterctl.CreateRepository(ctx, clusterctl.CreateRepositoryInput{
		E2EConfig:        e2eConfig,
		RepositoryFolder: filepath.Join(*artifactFolder, "repository"),
	})

	By("Starting caphv-manager (every namespace)")
	startManager()
})

var _ = AfterSuite(func() {
	if manager != nil && manager.Process != nil {
		_ = manager.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = manager.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = manager.Process.Kill()
		}
	}
	if harvesterProxy != nil && !*skipCleanup {
		pool := &unstructured.Unstructured{}
		pool.SetAPIVersion("loadbalancer.harvesterhci.io/v1beta1")
		pool.SetKind("IPPool")
		pool.SetName(poolName)
		_ = client.IgnoreNotFound(harvesterProxy.GetClient().Delete(ctx, pool))
	}
})

// readBedEnv reads the bed's DIR/env (KEY=VALUE lines).
func readBedEnv(path string) map[string]string {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "the test bed's env file; is the bed up?")
	env := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// loadConfig reads the E2EConfig as the framework's LoadE2EConfig does,
// without its validation (kubeadm providers required), and checks what the
// specs use here: intervals and the Kubernetes version.
func loadConfig(path string) *clusterctl.E2EConfig {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	config := &clusterctl.E2EConfig{}
	Expect(yaml.UnmarshalStrict(data, config)).To(Succeed(), "E2EConfig %s", path)
	config.Defaults()
	config.AbsPaths(filepath.Dir(path))
	Expect(config.Variables).To(HaveKey("KUBERNETES_VERSION"))
	for key, intervals := range config.Intervals {
		Expect(intervals).To(HaveLen(2), "interval %s: timeout and polling period", key)
		for _, i := range intervals {
			_, err := time.ParseDuration(i)
			Expect(err).NotTo(HaveOccurred(), "interval %s", key)
		}
	}
	return config
}

// prepareRepositorySources writes what the repository holds besides the
// files of the config: components.yaml (CAPHV's CRDs), the flavour
// md-remediation (the default template and a MachineHealthCheck) and the
// ClusterClass as the bed's RKE2 providers serve it; the release named as the
// framework's clusterctl takes it (clusterClassSource, repositoryVersion:
// generation_test.go).
func prepareRepositorySources(config *clusterctl.E2EConfig) {
	dir := filepath.Join(*artifactFolder, "sources")
	Expect(os.MkdirAll(dir, 0o750)).To(Succeed())
	var components bytes.Buffer
	crds, err := filepath.Glob(filepath.Join(*sourceDir, "config", "crd", "bases", "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(crds).NotTo(BeEmpty())
	for _, f := range crds {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		components.WriteString("---\n")
		components.Write(data)
	}
	componentsPath := filepath.Join(dir, "components.yaml")
	Expect(os.WriteFile(componentsPath, components.Bytes(), 0o600)).To(Succeed())

	data := filepath.Join(*sourceDir, "test", "capi-e2e", "data")
	base, err := os.ReadFile(filepath.Join(data, "cluster-template.yaml"))
	Expect(err).NotTo(HaveOccurred())
	mhc, err := os.ReadFile(filepath.Join(data, "machinehealthcheck-md-remediation.yaml"))
	Expect(err).NotTo(HaveOccurred())
	remediation := filepath.Join(dir, "cluster-template-md-remediation.yaml")
	Expect(os.WriteFile(remediation, append(append(base, '\n'), mhc...), 0o600)).To(Succeed())

	Expect(config.Providers).To(HaveLen(1))
	Expect(config.Providers[0].Versions).To(HaveLen(1))
	v := &config.Providers[0].Versions[0]
	v.Name = repositoryVersion(v.Name)
	*infrastructureProvider = "harvester:" + v.Name
	v.Value = componentsPath
	for i := range v.Files {
		if v.Files[i].TargetName == "clusterclass-harvester-rke2.yaml" {
			v.Files[i].SourcePath = clusterClassSource(v.Files[i].SourcePath, dir)
		}
	}
	v.Files = append(v.Files, clusterctl.Files{
		SourcePath: remediation, TargetName: "cluster-template-md-remediation.yaml",
	})
}

func base64File(path string) string {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return base64.StdEncoding.EncodeToString(data)
}

func kubectl(args ...string) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", mgmtProxy.GetKubeconfigPath()}, args...)...)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), out)
}

// createPool creates (or keeps) the IPPool the templates name: addresses
// .10-.200 of poolPrefix on the bed's VM network default/vlan100.
func createPool() {
	pool := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "loadbalancer.harvesterhci.io/v1beta1",
		"kind":       "IPPool",
		"metadata":   map[string]interface{}{"name": poolName},
		"spec": map[string]interface{}{
			"description": "Cluster API e2e specs (test/capi-e2e)",
			"ranges": []interface{}{map[string]interface{}{
				"subnet":     poolPrefix + "0/24",
				"rangeStart": poolPrefix + "10",
				"rangeEnd":   poolPrefix + "200",
				"gateway":    poolPrefix + "1",
			}},
			// No scope: {*,*,*} would make it a second global pool, which
			// Harvester (and the simulated one) refuses.
			"selector": map[string]interface{}{
				"priority": int64(4999),
				"network":  "default/vlan100",
			},
		},
	}}
	err := harvesterProxy.GetClient().Create(ctx, pool)
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred(), "IPPool %s", poolName)
	}
}

// freePort returns a port of 127.0.0.1 nothing listens on right now.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startManager runs caphv-manager of the build tree against the bed's mgmt
// apiserver, as the C++ e2e fixture does but for every namespace, and waits
// until /readyz answers.
func startManager() {
	bin := filepath.Join(*buildDir, "cmd", "caphv-manager", "caphv-manager")
	Expect(bin).To(BeAnExistingFile(), "build caphv-manager first")
	probe, metrics := freePort(), freePort()
	logPath := filepath.Join(*artifactFolder, "caphv-manager.log")
	logFile, err := os.Create(logPath)
	Expect(err).NotTo(HaveOccurred())
	manager = exec.Command(bin,
		"--kubeconfig", mgmtProxy.GetKubeconfigPath(),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metrics),
		"--metrics-secure=false",
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probe))
	manager.Stdout, manager.Stderr = logFile, logFile
	// Its own process group: a Ctrl-C of the suite reaches it through AfterSuite only.
	manager.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	Expect(manager.Start()).To(Succeed())
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", probe)
	httpClient := &http.Client{Timeout: 2 * time.Second}
	Eventually(func() int {
		resp, err := httpClient.Get(readyz)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}, 30*time.Second, 500*time.Millisecond).Should(Equal(http.StatusOK),
		"caphv-manager not ready; see %s", logPath)
}
