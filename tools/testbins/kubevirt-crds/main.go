// Command kubevirt-crds writes the VirtualMachine and VirtualMachineInstance CRDs as KubeVirt's
// virt-operator registers them, for the Harvester simulator (hack/build-testbins.sh
// kubevirt-crds). KubeVirt publishes no CRD YAML: virt-operator builds its CRDs in code
// (pkg/virt-operator/resource/generate/components/crds.go) and takes each version's schema from
// the map CRDsValidation of validations_generated.go (raw YAML strings, keyed by the singular
// name). This program reads that file of the downloaded module as Go source (it imports nothing
// from KubeVirt), decodes the two schemas as virt-operator does (YAML to JSON with
// sigs.k8s.io/yaml) and puts them into the CRDs of crds.go: names, versions (those of
// kubevirt.io/api core/v1 ApiSupportedVersions), printer columns and subresources, which are
// restated below for KubeVirt v1.6.
//
// Usage: kubevirt-crds MODULE_DIR OUT_DIR
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/yaml"
)

const validationsFile = "pkg/virt-operator/resource/generate/components/validations_generated.go"

type column struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	JSONPath    string `json:"jsonPath"`
	Priority    int    `json:"priority,omitempty"`
}

type crdSpec struct {
	kind, plural, singular string
	shortNames             []string
	columns                []column
	statusSubresource      bool
}

// As crds.go (NewVirtualMachineCrd, NewVirtualMachineInstanceCrd) of KubeVirt v1.6.0 has them.
var crds = []crdSpec{
	{
		kind: "VirtualMachine", plural: "virtualmachines", singular: "virtualmachine",
		shortNames: []string{"vm", "vms"},
		columns: []column{
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Status", Description: "Human Readable Status", Type: "string", JSONPath: ".status.printableStatus"},
			{Name: "Ready", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
		},
		statusSubresource: true,
	},
	{
		// No status subresource: virt-handler writes a VMI's status with the object itself.
		kind: "VirtualMachineInstance", plural: "virtualmachineinstances", singular: "virtualmachineinstance",
		shortNames: []string{"vmi", "vmis"},
		columns: []column{
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
			{Name: "IP", Type: "string", JSONPath: ".status.interfaces[0].ipAddress"},
			{Name: "NodeName", Type: "string", JSONPath: ".status.nodeName"},
			{Name: "Ready", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
			{Name: "Live-Migratable", Type: "string", JSONPath: ".status.conditions[?(@.type=='LiveMigratable')].status", Priority: 1},
			{Name: "Paused", Type: "string", JSONPath: ".status.conditions[?(@.type=='Paused')].status", Priority: 1},
		},
	},
}

// schemas returns the string values of the map literal CRDsValidation, by key.
func schemas(path string) (map[string]string, error) {
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || spec.Names[0].Name != "CRDsValidation" || len(spec.Values) != 1 {
			return true
		}
		lit, ok := spec.Values[0].(*ast.CompositeLit)
		if !ok {
			return false
		}
		for _, elt := range lit.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			k, kok := kv.Key.(*ast.BasicLit)
			v, vok := kv.Value.(*ast.BasicLit)
			if !kok || !vok || k.Kind != token.STRING || v.Kind != token.STRING {
				continue
			}
			key, err1 := strconv.Unquote(k.Value)
			value, err2 := strconv.Unquote(v.Value)
			if err1 == nil && err2 == nil {
				out[key] = value
			}
		}
		return false
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no map literal CRDsValidation", path)
	}
	return out, nil
}

// crd builds the CustomResourceDefinition of c with validation (CRDsValidation[c.singular]) as
// the schema of every version.
func crd(c crdSpec, validation string) (map[string]any, error) {
	var v map[string]any
	if err := yaml.Unmarshal([]byte(validation), &v); err != nil {
		return nil, fmt.Errorf("%s: %w", c.singular, err)
	}
	if _, ok := v["openAPIV3Schema"].(map[string]any); !ok || len(v) != 1 {
		return nil, fmt.Errorf("%s: the validation is not {openAPIV3Schema: {...}}", c.singular)
	}
	versions := []map[string]any{
		{"name": "v1", "served": true, "storage": true},
		{
			"name": "v1alpha3", "served": true, "storage": false, "deprecated": true,
			"deprecationWarning": "kubevirt.io/v1alpha3 is now deprecated and will be removed in a future release.",
		},
	}
	for _, ver := range versions {
		ver["additionalPrinterColumns"] = c.columns
		ver["schema"] = v
		if c.statusSubresource {
			ver["subresources"] = map[string]any{"status": map[string]any{}}
		}
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{
			"name":   c.plural + ".kubevirt.io",
			"labels": map[string]string{"kubevirt.io": ""},
		},
		"spec": map[string]any{
			"group": "kubevirt.io",
			"scope": "Namespaced",
			"names": map[string]any{
				"kind":       c.kind,
				"listKind":   c.kind + "List",
				"plural":     c.plural,
				"singular":   c.singular,
				"shortNames": c.shortNames,
				"categories": []string{"all"},
			},
			"versions": versions,
		},
	}, nil
}

func run(moduleDir, outDir string) error {
	all, err := schemas(filepath.Join(moduleDir, validationsFile))
	if err != nil {
		return err
	}
	for _, c := range crds {
		validation, ok := all[c.singular]
		if !ok {
			return fmt.Errorf("%s: no key %q in CRDsValidation", validationsFile, c.singular)
		}
		obj, err := crd(c, validation)
		if err != nil {
			return err
		}
		// Through JSON first: the YAML is then what sigs.k8s.io/yaml writes for that JSON.
		j, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		y, err := yaml.JSONToYAML(j)
		if err != nil {
			return err
		}
		header := fmt.Sprintf("# %s.kubevirt.io as KubeVirt's virt-operator registers it. Generated by\n"+
			"# tools/testbins/kubevirt-crds (CAPHV) from the module %s/%s,\n# %s.\n",
			c.plural, filepath.Base(filepath.Dir(moduleDir)), filepath.Base(moduleDir), validationsFile)
		out := filepath.Join(outDir, "kubevirt.io_"+c.plural+".yaml")
		if err := os.WriteFile(out, append([]byte(header), y...), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: kubevirt-crds MODULE_DIR OUT_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "kubevirt-crds:", err)
		os.Exit(1)
	}
}
