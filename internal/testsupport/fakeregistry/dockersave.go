package fakeregistry

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// PushDockerSave stores the image of a `docker save` tarball (its manifest.json, which both
// the legacy and the OCI save layouts hold) as an OCI image under tag; the tarball is
// unpacked into dir, from which its layers are served.
func (r *Registry) PushDockerSave(repo, tag, tarball, dir string) (Descriptor, error) {
	if out, err := exec.Command("tar", "-xf", tarball, "-C", dir).CombinedOutput(); err != nil {
		return Descriptor{}, fmt.Errorf("unpack %s: %v: %s", tarball, err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return Descriptor{}, err
	}
	var saved []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(b, &saved); err != nil || len(saved) == 0 {
		return Descriptor{}, fmt.Errorf("%s: no docker save manifest", tarball)
	}
	config, err := os.ReadFile(filepath.Join(dir, saved[0].Config))
	if err != nil {
		return Descriptor{}, err
	}
	img := Image{Config: config}
	for _, l := range saved[0].Layers {
		d, err := r.PutBlobFile("application/vnd.oci.image.layer.v1.tar", filepath.Join(dir, l))
		if err != nil {
			return Descriptor{}, err
		}
		img.Layers = append(img.Layers, d)
	}
	return r.PushImage(repo, tag, "application/vnd.oci.image.manifest.v1+json", img), nil
}
