//go:build linux

package sandbox

// Backends lists every backend, in the order --sandbox auto tries them: on Linux the ones
// that need no daemon and no image first.
func Backends() []Backend { return []Backend{&Bwrap{}, Landlock{}, &Docker{}, None{}} }

// IsolationFix is what makes an isolating backend work on a machine that has none.
const IsolationFix = "install bubblewrap"
