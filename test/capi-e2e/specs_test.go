package capie2e

// The upstream specs this suite runs, unmodified, with CAPHV ("harvester") as
// the infrastructure provider (this file is shared by the two suites: this
// folder's on framework v1.10 and v1beta2/'s on v1.13):
//
//   QuickStartSpec, flavour topology: a Cluster of the ClusterClass
//     harvester-rke2, one control plane and one worker.
//   QuickStartSpec, default flavour: RKE2ControlPlane and a MachineDeployment
//     without a ClusterClass.
//   MachineDeploymentScaleSpec: the MachineDeployment 1 -> 3 -> 1, then
//     deleted with foreground propagation.
//   MachineDeploymentRolloutSpec (rollout_test.go, framework v1.10 only: the
//     spec left the framework in v1.13): in-place mutable fields of the
//     MachineDeployment, then a new HarvesterMachineTemplate (rolling update).
//   MachineDeploymentRemediationSpec: a MachineHealthCheck over the workers
//     remediates the Machine whose Node gets the unhealthy condition.
//
// Left out (docs/testbed.md, "Cluster API's end-to-end specs", says why):
// the specs written around the kubeadm providers or docker, machine pools,
// conformance; clusterclass-changes, cluster-deletion and the autoscaler spec
// are not tried yet.

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upstream "sigs.k8s.io/cluster-api/test/e2e"
)

// infrastructureProvider names the local repository's release, so that
// clusterctl needs no provider inventory in the management cluster (set in
// BeforeSuite: "harvester:" + repositoryVersion).
var infrastructureProvider = ptr.To("")

// The bed's one workload apiserver stands for every spec's cluster: before a
// spec, what RKE2 of an earlier cluster left there must be gone (the
// simulator removes kube-system/rke2-serving with the last server Node), or
// the new control plane would count as initialised at once.
var _ = BeforeEach(func() {
	Eventually(func(g Gomega) {
		err := workloadProxy.GetClient().Get(ctx,
			client.ObjectKey{Namespace: "kube-system", Name: "rke2-serving"}, &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(),
			"kube-system/rke2-serving of an earlier cluster still in the workload cluster (%v)", err)
	}, 3*time.Minute, time.Second).Should(Succeed())
})

var _ = Describe("When following the Cluster API quick-start with ClusterClass [ClusterClass]", func() {
	upstream.QuickStartSpec(ctx, func() upstream.QuickStartSpecInput {
		return upstream.QuickStartSpecInput{
			E2EConfig:              e2eConfig,
			ClusterctlConfigPath:   clusterctlConfigPath,
			BootstrapClusterProxy:  mgmtProxy,
			ArtifactFolder:         *artifactFolder,
			SkipCleanup:            *skipCleanup,
			InfrastructureProvider: infrastructureProvider,
			Flavor:                 ptr.To("topology"),
			ControlPlaneWaiters:    rke2ControlPlaneWaiters(),
		}
	})
})

var _ = Describe("When following the Cluster API quick-start", func() {
	upstream.QuickStartSpec(ctx, func() upstream.QuickStartSpecInput {
		return upstream.QuickStartSpecInput{
			E2EConfig:              e2eConfig,
			ClusterctlConfigPath:   clusterctlConfigPath,
			BootstrapClusterProxy:  mgmtProxy,
			ArtifactFolder:         *artifactFolder,
			SkipCleanup:            *skipCleanup,
			InfrastructureProvider: infrastructureProvider,
			ControlPlaneWaiters:    rke2ControlPlaneWaiters(),
		}
	})
})

var _ = Describe("When testing MachineDeployment scale out/in", func() {
	upstream.MachineDeploymentScaleSpec(ctx, func() upstream.MachineDeploymentScaleSpecInput {
		return upstream.MachineDeploymentScaleSpecInput{
			E2EConfig:              e2eConfig,
			ClusterctlConfigPath:   clusterctlConfigPath,
			BootstrapClusterProxy:  mgmtProxy,
			ArtifactFolder:         *artifactFolder,
			SkipCleanup:            *skipCleanup,
			InfrastructureProvider: infrastructureProvider,
			ControlPlaneWaiters:    rke2ControlPlaneWaiters(),
		}
	})
})

var _ = Describe("When testing unhealthy machines remediation", func() {
	upstream.MachineDeploymentRemediationSpec(ctx, func() upstream.MachineDeploymentRemediationSpecInput {
		return upstream.MachineDeploymentRemediationSpecInput{
			E2EConfig:              e2eConfig,
			ClusterctlConfigPath:   clusterctlConfigPath,
			BootstrapClusterProxy:  mgmtProxy,
			ArtifactFolder:         *artifactFolder,
			SkipCleanup:            *skipCleanup,
			InfrastructureProvider: infrastructureProvider,
			ControlPlaneWaiters:    rke2ControlPlaneWaiters(),
		}
	})
})
