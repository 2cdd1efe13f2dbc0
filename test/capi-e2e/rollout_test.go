package capie2e

// MachineDeploymentRolloutSpec of framework v1.10 (specs_test.go lists the
// rest); v1.13 has no such spec, so the v1beta2/ suite does without.

import (
	. "github.com/onsi/ginkgo/v2"

	upstream "sigs.k8s.io/cluster-api/test/e2e"
)

var _ = Describe("When testing MachineDeployment rolling upgrades", func() {
	upstream.MachineDeploymentRolloutSpec(ctx, func() upstream.MachineDeploymentRolloutSpecInput {
		return upstream.MachineDeploymentRolloutSpecInput{
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
