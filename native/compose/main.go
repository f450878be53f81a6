// The Docker Compose v2 CLI plugin (`docker compose`), built from the Go
// module proxy. Compose's own cmd/main.go imports its internal package (for
// the version string), which no other module may import, so this main
// package is ours; the version comes in with -ldflags -X.
package main

import (
	"os"

	"github.com/docker/cli/cli-plugins/metadata"
	"github.com/docker/cli/cli-plugins/plugin"
	"github.com/docker/cli/cli/command"
	"github.com/docker/compose/v2/cmd/compatibility"
	commands "github.com/docker/compose/v2/cmd/compose"
	"github.com/docker/compose/v2/cmd/prompt"
	"github.com/docker/compose/v2/pkg/compose"
	"github.com/spf13/cobra"
)

var version = "unknown"

func main() {
	// Run as `docker-compose` too, as compose's own binary does.
	if plugin.RunningStandalone() {
		os.Args = append([]string{"docker"}, compatibility.Convert(os.Args[1:])...)
	}
	plugin.Run(func(cli command.Cli) *cobra.Command {
		backend := compose.NewComposeService(cli, compose.WithPrompt(prompt.NewPrompt(cli.In(), cli.Out()).Confirm))
		cmd := commands.RootCommand(cli, backend)
		next := cmd.PersistentPreRunE
		cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
			// The plugin framework sets the CLI up (context, API client) here.
			if err := plugin.PersistentPreRunE(c, args); err != nil {
				return err
			}
			if next != nil {
				return next(c, args)
			}
			return nil
		}
		return cmd
	}, metadata.Metadata{SchemaVersion: "0.1.0", Vendor: "Docker Inc.", Version: version}, command.WithUserAgent("compose/"+version))
}
