// Command composecheck loads a compose file with the real Compose spec
// loader (compose-go, as `docker compose config` does) and fails on what
// would break a user's `docker compose up` or weaken it:
//   - anything the Compose schema rejects (unknown keys, bad types);
//   - a ${VARIABLE} with no default that the project's .env does not set;
//   - a published port that is not bound to 127.0.0.1.
// Every profile is loaded. On success it prints a JSON summary of the
// project for tests to inspect.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/types"
	"gopkg.in/yaml.v3"
)

type port struct {
	HostIP    string `json:"host_ip"`
	Published string `json:"published"`
	Target    uint32 `json:"target"`
}

type service struct {
	Image       string            `json:"image"`
	Profiles    []string          `json:"profiles"`
	Ports       []port            `json:"ports"`
	DependsOn   map[string]string `json:"depends_on"`
	Healthcheck bool              `json:"healthcheck"`
	Build       bool              `json:"build"`
	BuildArgs   map[string]string `json:"build_args,omitempty"`
	Environment map[string]string `json:"environment"`
}

func main() {
	file := flag.String("f", "", "compose file")
	flag.Parse()
	if *file == "" {
		fmt.Fprintln(os.Stderr, "usage: composecheck -f docker-compose.yml")
		os.Exit(2)
	}
	if err := check(*file); err != nil {
		fmt.Fprintln(os.Stderr, "composecheck:", err)
		os.Exit(1)
	}
}

func check(file string) error {
	dir := filepath.Dir(file)
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var dict map[string]any
	if err := yaml.Unmarshal(raw, &dict); err != nil {
		return err
	}
	profiles := allProfiles(dict)

	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithWorkingDirectory(dir), // docker compose: the first file's folder
		cli.WithEnvFiles(),            // its .env, as docker compose reads it
		cli.WithDotEnv,
		cli.WithProfiles(profiles),
		cli.WithInterpolation(true),
	)
	if err != nil {
		return err
	}
	if missing := missingVariables(dict, opts.Environment); len(missing) > 0 {
		return fmt.Errorf("variables with no default and not set in %v: %v", opts.EnvFiles, missing)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return err
	}

	out := map[string]service{}
	var bad []string
	for name, s := range project.Services {
		out[name] = summarize(s)
		for _, p := range s.Ports {
			if p.Published != "" && p.HostIP != "127.0.0.1" {
				bad = append(bad, fmt.Sprintf("%s publishes %s:%s->%d", name, p.HostIP, p.Published, p.Target))
			}
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("ports not bound to 127.0.0.1: %v", bad)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"name": project.Name, "profiles": profiles, "services": out, "volumes": keys(project.Volumes)})
}

func allProfiles(dict map[string]any) []string {
	seen := map[string]bool{}
	services, _ := dict["services"].(map[string]any)
	for _, s := range services {
		svc, _ := s.(map[string]any)
		ps, _ := svc["profiles"].([]any)
		for _, p := range ps {
			if str, ok := p.(string); ok {
				seen[str] = true
			}
		}
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func missingVariables(dict map[string]any, env types.Mapping) []string {
	var missing []string
	for name, v := range template.ExtractVariables(dict, template.DefaultPattern) {
		_, set := env[name]
		if !set && v.DefaultValue == "" && v.PresenceValue == "" {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	return missing
}

func summarize(s types.ServiceConfig) service {
	out := service{
		Image:       s.Image,
		Profiles:    s.Profiles,
		DependsOn:   map[string]string{},
		Healthcheck: s.HealthCheck != nil && !s.HealthCheck.Disable,
		Build:       s.Build != nil,
		Environment: map[string]string{},
	}
	if s.Build != nil {
		out.BuildArgs = map[string]string{}
		for k, v := range s.Build.Args {
			if v != nil {
				out.BuildArgs[k] = *v
			}
		}
	}
	for _, p := range s.Ports {
		out.Ports = append(out.Ports, port{HostIP: p.HostIP, Published: p.Published, Target: p.Target})
	}
	for name, d := range s.DependsOn {
		out.DependsOn[name] = d.Condition
	}
	for k, v := range s.Environment {
		if v != nil {
			out.Environment[k] = *v
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
