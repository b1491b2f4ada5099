package registry

// Event is something a pull tells as it goes (Client.Progress): one of the types below. The
// command renders them.
type Event interface{ registryEvent() }

// Pulling tells the layers of image Ref are about to be downloaded: Layers of Bytes in all.
type Pulling struct {
	Ref    Reference
	Layers int
	Bytes  int64
}

func (Pulling) registryEvent() {}
