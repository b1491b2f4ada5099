// The sandbox flags, of the commands that run episodes or check where they would run: run,
// doctor and tasks validate (--difficulty plays the baseline). They live apart from any one
// command so that each reads them, and checks them, the same way.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
)

// sandboxFlag is --sandbox, of run, doctor and tasks validate.
func sandboxFlag(dst *string) cli.Flag {
	return &cli.StringFlag{Name: "sandbox", Value: sandbox.NameAuto, Destination: dst, Sources: env("sandbox"),
		Usage: "auto, " + strings.Join(sandboxNames(), ", ") + " (none: no isolation)"}
}

// sandboxImageFlag is --sandbox-image, of run and doctor.
func sandboxImageFlag(dst *string) cli.Flag {
	return &cli.StringFlag{
		Name:        "sandbox-image",
		Destination: dst,
		Sources:     env("sandbox-image"),
		DefaultText: sandbox.DefaultImage,
		Usage: "the image an episode runs in: an image name with docker; a docker save tarball, an OCI layout folder " +
			"or a registry reference (HOST/NAME:TAG, HOST/NAME@sha256:...) with bwrap (see docs/platforms.md)",
	}
}

// validSandbox refuses a --sandbox that names no backend.
func validSandbox(name string) error {
	if name != sandbox.NameAuto && !slices.Contains(sandboxNames(), name) {
		return usageErrorf("--sandbox %q: must be auto, %s", name, strings.Join(sandboxNames(), ", "))
	}
	return nil
}

// sandboxNames are the backends --sandbox may name besides auto.
func sandboxNames() []string {
	var names []string
	for _, b := range sandbox.Backends() {
		names = append(names, b.Name())
	}
	return names
}

// useImage makes the backend run episodes in the image ref ("": its default). A failure of
// the machine, the daemon or the network is exit 3, a reference that names no usable image
// exit 2.
func useImage(ctx context.Context, backend sandbox.Backend, ref string, progress io.Writer) error {
	if ref == "" {
		return nil
	}
	cache, err := imageCacheDir()
	if err != nil {
		return err
	}
	if err := sandbox.UseImage(ctx, backend, ref, cache, imageProgress(progress)); err != nil {
		if ctx.Err() != nil {
			return interrupted(fmt.Errorf("interrupted: %w", err))
		}
		if errors.Is(err, sandbox.ErrUnavailable) {
			return fmt.Errorf("--sandbox-image: %w", err) // infrastructure: exit 3
		}
		return usageError(imageHint(fmt.Errorf("--sandbox-image: %w", err)))
	}
	return nil
}

// imageCacheDir is where images are unpacked for bwrap: $XDG_CACHE_HOME/aa-grade/rootfs.
func imageCacheDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the image cache: %w", err)
	}
	return filepath.Join(cache, "aa-grade", "rootfs"), nil
}
