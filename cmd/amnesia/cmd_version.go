package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print amnesia's version, commit and Go version (same as --version)",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(cmd.OutOrStdout(), versionText())
			return nil
		},
	}
}

// versionText is what `amnesia version` and `amnesia --version` print, from
// the build information the Go toolchain embeds: the main module's version
// ("(devel)" when built without one), the VCS revision and whether the tree
// had uncommitted changes (when built inside a checkout), and the Go version.
func versionText() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("amnesia (no build information)\ngo      %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	return formatVersion(bi)
}

// formatVersion formats build information. The VCS lines are there when
// the go command stamped them: a build inside a git checkout whose .git is
// a directory (not a git worktree), without -buildvcs=false.
func formatVersion(bi *debug.BuildInfo) string {
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, modified, at string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			at = s.Value
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "amnesia %s\n", version)
	fmt.Fprintf(&b, "module  %s\n", bi.Main.Path)
	switch {
	case rev == "":
		fmt.Fprintf(&b, "commit  unknown (not stamped: built outside a git checkout, or with -buildvcs=false)\n")
	default:
		line := rev
		if at != "" {
			line += " (" + at + ")"
		}
		if modified == "true" {
			line += ", with uncommitted changes"
		}
		fmt.Fprintf(&b, "commit  %s\n", line)
	}
	fmt.Fprintf(&b, "go      %s %s/%s\n", bi.GoVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
