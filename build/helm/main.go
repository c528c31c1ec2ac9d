// Command outpost-helm renders Helm charts for the Outpost hub with Helm's own library
// (helm.sh/helm/v4): what `helm template` does, and nothing that reaches a cluster, a chart
// repository or the network. The hub (hub/catalog/helm.ts) runs it once per chart and values,
// with a time and an output bound; docs/catalog.md says why Outpost renders this way.
//
//	outpost-helm inspect CHART.tgz    chart metadata, loaded dependencies, default values, profiles
//	outpost-helm render < request.json   {"chart": PATH, "release": NAME, "namespace": NS, "values": {...}}
//
// Both print one JSON document on stdout; a failure prints {"error": "..."} and exits 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
)

type dependency struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Path is where the subchart sits, e.g. "web/charts/redis".
	Path string `json:"path"`
}

type chartInfo struct {
	Name         string                    `json:"name"`
	Version      string                    `json:"version"`
	AppVersion   string                    `json:"appVersion,omitempty"`
	Description  string                    `json:"description,omitempty"`
	Type         string                    `json:"type,omitempty"`
	Dependencies []dependency              `json:"dependencies"`
	Values       map[string]any            `json:"values"`
	Profiles     map[string]map[string]any `json:"profiles"`
	Readme       string                    `json:"readme,omitempty"`
	HasCRDs      bool                      `json:"hasCRDs"`
}

type hook struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"`
	Path   string   `json:"path"`
	Events []string `json:"events"`
}

type renderRequest struct {
	Chart     string         `json:"chart"`
	Release   string         `json:"release"`
	Namespace string         `json:"namespace"`
	Values    map[string]any `json:"values"`
}

type renderResult struct {
	Chart        string       `json:"chart"`
	Version      string       `json:"version"`
	Dependencies []dependency `json:"dependencies"`
	Manifest     string       `json:"manifest"`
	Hooks        []hook       `json:"hooks"`
}

// dependencies lists every loaded subchart, depth first, as the chart carries it in charts/.
func dependencies(c *chart.Chart, at string) []dependency {
	out := []dependency{}
	for _, d := range c.Dependencies() {
		p := path.Join(at, "charts", d.Name())
		out = append(out, dependency{Name: d.Name(), Version: d.Metadata.Version, Path: p})
		out = append(out, dependencies(d, p)...)
	}
	return out
}

func load(file string) (*chart.Chart, error) {
	c, err := loader.Load(file)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	switch c.Metadata.Type {
	case "", "application":
	default:
		return nil, fmt.Errorf("%s charts are not installable (Chart.yaml type: %s)", c.Metadata.Type, c.Metadata.Type)
	}
	// What `helm install` checks first: every dependency Chart.yaml names is in charts/ (nothing is
	// fetched from a chart repository here; `helm dependency build` before packing).
	if ac, err := helmchart.NewAccessor(c); err == nil {
		if reqs := ac.MetaDependencies(); len(reqs) > 0 {
			if err := action.CheckDependencies(c, reqs); err != nil {
				return nil, fmt.Errorf("%w (run helm dependency build before packing the chart)", err)
			}
		}
	} else {
		return nil, err
	}
	return c, nil
}

func inspect(file string) (any, error) {
	c, err := load(file)
	if err != nil {
		return nil, err
	}
	info := chartInfo{
		Name:         c.Name(),
		Version:      c.Metadata.Version,
		AppVersion:   c.Metadata.AppVersion,
		Description:  c.Metadata.Description,
		Type:         c.Metadata.Type,
		Dependencies: dependencies(c, c.Name()),
		Values:       c.Values,
		Profiles:     map[string]map[string]any{},
		HasCRDs:      len(c.CRDObjects()) > 0,
	}
	if info.Values == nil {
		info.Values = map[string]any{}
	}
	// A profile is a values file at the chart's root, values-NAME.yaml (`helm install -f`'s usual name).
	for _, f := range c.Files {
		name := f.Name
		if strings.Contains(name, "/") || !strings.HasPrefix(name, "values-") || !strings.HasSuffix(name, ".yaml") {
			if strings.EqualFold(name, "README.md") {
				info.Readme = string(f.Data)
			}
			continue
		}
		var v map[string]any
		if err := yaml.Unmarshal(f.Data, &v); err != nil {
			return nil, fmt.Errorf("%s: not valid YAML: %w", name, err)
		}
		if v == nil {
			v = map[string]any{}
		}
		info.Profiles[strings.TrimSuffix(strings.TrimPrefix(name, "values-"), ".yaml")] = v
	}
	return info, nil
}

func render(in io.Reader) (any, error) {
	var req renderRequest
	dec := json.NewDecoder(in)
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("the request is not valid JSON: %w", err)
	}
	c, err := load(req.Chart)
	if err != nil {
		return nil, err
	}
	vals := req.Values
	if vals == nil {
		vals = map[string]any{}
	}
	// What `helm template` does: an install, dry-run on the client, against an in-memory release
	// store and Helm's default capabilities; `lookup` answers empty, nothing is contacted.
	cfg := action.NewConfiguration()
	install := action.NewInstall(cfg)
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = req.Release
	install.Namespace = req.Namespace
	install.Replace = true
	install.IncludeCRDs = false
	install.DisableOpenAPIValidation = true
	rel, err := install.RunWithContext(context.Background(), c, vals)
	if err != nil {
		return nil, err
	}
	var r *release.Release
	switch x := rel.(type) {
	case *release.Release:
		r = x
	case release.Release:
		r = &x
	default:
		return nil, fmt.Errorf("unexpected release type %T", rel)
	}
	out := renderResult{
		Chart:        c.Name(),
		Version:      c.Metadata.Version,
		Dependencies: dependencies(c, c.Name()),
		Manifest:     r.Manifest,
		Hooks:        []hook{},
	}
	for _, h := range r.Hooks {
		ev := []string{}
		for _, e := range h.Events {
			ev = append(ev, string(e))
		}
		sort.Strings(ev)
		out.Hooks = append(out.Hooks, hook{Name: h.Name, Kind: h.Kind, Path: h.Path, Events: ev})
	}
	return out, nil
}

func main() {
	// Helm logs warnings (a deprecated chart, CRDs) through slog: they go to stderr, never into the JSON.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	var (
		result any
		err    error
	)
	switch {
	case len(os.Args) == 3 && os.Args[1] == "inspect":
		result, err = inspect(os.Args[2])
	case len(os.Args) == 2 && os.Args[1] == "render":
		result, err = render(os.Stdin)
	case len(os.Args) == 2 && os.Args[1] == "version":
		result = map[string]string{"helm": helmVersion}
	default:
		err = errors.New("usage: outpost-helm inspect CHART.tgz | outpost-helm render < request.json | outpost-helm version")
	}
	enc := json.NewEncoder(os.Stdout)
	if err != nil {
		_ = enc.Encode(map[string]string{"error": err.Error()})
		os.Exit(1)
	}
	if err := enc.Encode(result); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
