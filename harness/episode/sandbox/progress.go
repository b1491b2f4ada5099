package sandbox

import "github.com/aa-grade/aa-grade/harness/episode/sandbox/image/registry"

// Event is something preparing a backend tells as it goes (UseImage's progress): one of the
// types below. The command renders them.
type Event interface{ sandboxEvent() }

// PullingImage tells bwrap's image is about to be downloaded from its registry: its layers,
// and their size.
type PullingImage registry.Pulling

// PullingThroughDaemon tells the Docker daemon is about to pull the image Ref (as given),
// which it lacks.
type PullingThroughDaemon struct{ Ref string }

func (PullingImage) sandboxEvent()         {}
func (PullingThroughDaemon) sandboxEvent() {}
