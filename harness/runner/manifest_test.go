package runner

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestKubernetesManifestShardsMatch keeps the example Indexed Job consistent: indexed
// completions, one pod per shard, and the shard count in the command equal to completions.
func TestKubernetesManifestShardsMatch(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kubernetes/aa-grade-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Kind string
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Parallelism    int
			Template       struct {
				Spec struct {
					Containers []struct {
						Args []string
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	if got, want := [2]string{job.Kind, job.Spec.CompletionMode}, [2]string{"Job", "Indexed"}; got != want {
		t.Errorf("a %q, want an indexed job, %q", got, want)
	}
	if job.Spec.Completions < 2 {
		t.Errorf("%d completions, want a shard each, 2 or more", job.Spec.Completions)
	}
	if job.Spec.Parallelism != job.Spec.Completions {
		t.Errorf("parallelism %d, want one pod per shard, %d", job.Spec.Parallelism, job.Spec.Completions)
	}
	if t.Failed() {
		t.FailNow()
	}
	m := regexp.MustCompile(`--shard "\$\(\(JOB_COMPLETION_INDEX \+ 1\)\)/(\d+)"`).FindStringSubmatch(job.Spec.Template.Spec.Containers[0].Args[0])
	if m == nil || m[1] != strconv.Itoa(job.Spec.Completions) {
		t.Fatalf("the command's shard count %v does not match completions %d", m, job.Spec.Completions)
	}
}
