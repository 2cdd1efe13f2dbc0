module testbins.local/kubevirt-crds

go 1.24

require (
	kubevirt.io/kubevirt v1.6.0
	sigs.k8s.io/yaml v1.4.0
)
