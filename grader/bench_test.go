package grader

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchGroundTruth is shaped like the real ones: a dozen groups, filters, aliases.
func benchGroundTruth(i int) string {
	return fmt.Sprintf(`
apiVersion: itbench.io/v1
kind: GroundTruth
spec:
  groups:
    - {id: svc%[1]d-deployment-1, kind: Deployment, namespace: otel-demo, filter: ['svc%[1]d\b'], root_cause: true}
    - {id: svc%[1]d-pod-1, kind: Pod, namespace: otel-demo, filter: [svc%[1]d-.*]}
    - {id: svc%[1]d-service-1, kind: Service, namespace: otel-demo, filter: ['svc%[1]d\b']}
    - {id: frontend-service-1, kind: Service, namespace: otel-demo, filter: ['frontend\b']}
    - {id: frontend-pod-1, kind: Pod, namespace: otel-demo, filter: [frontend-.*]}
    - {id: frontend-proxy-service-1, kind: Service, namespace: otel-demo, filter: ['frontend-proxy\b']}
    - {id: frontend-proxy-pod-1, kind: Pod, namespace: otel-demo, filter: [frontend-proxy-.*]}
    - {id: checkout-service-1, kind: Service, namespace: otel-demo, filter: ['checkout\b']}
    - {id: checkout-pod-1, kind: Pod, namespace: otel-demo, filter: [checkout-.*]}
    - {id: flagd-config, kind: ConfigMap, namespace: otel-demo, name: flagd-config}
    - {id: net-1, kind: NetworkChaos, namespace: chaos-mesh, filter: ['.*svc%[1]d-partition']}
  aliases:
    - [svc%[1]d-service-1, svc%[1]d-pod-1]
    - [frontend-service-1, frontend-pod-1]
    - [checkout-service-1, checkout-pod-1]
`, i)
}

func benchSubmission(i, repeat int) []byte {
	return fmt.Appendf(nil, `{"contributing_factors":[
 {"name":"otel-demo/Pod/svc%[1]d-8546fdc74d-d68cn","reasoning":"OOMKilled","evidence":"events"},
 {"name":"otel-demo/Service/frontend","reasoning":"errors","evidence":"traces"},
 {"name":"otel-demo/Deployment/checkout-%[2]d","reasoning":"latency","evidence":"metrics"},
 {"name":"chaos-mesh/Schedule/otel-demo-svc%[1]d-partition","reasoning":"chaos","evidence":"objects"}]}`, i, repeat)
}

// BenchmarkGrade10000Episodes reads and scores 10,000 submissions (40 tasks, 250 each) against
// ground truths parsed once per task, as `aa-grade grade` does.
func BenchmarkGrade10000Episodes(b *testing.B) {
	const tasks, perTask = 40, 250
	gts := make([]*GroundTruth, tasks)
	subs := make([][][]byte, tasks)
	for i := range tasks {
		gt, err := ParseGroundTruth([]byte(benchGroundTruth(i)))
		if err != nil {
			b.Fatal(err)
		}
		gts[i] = gt
		for r := range perTask {
			subs[i] = append(subs[i], benchSubmission(i, r))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		var total float64
		for i, gt := range gts {
			for _, doc := range subs[i] {
				sub, err := ReadSubmission(doc)
				if err != nil {
					b.Fatal(err)
				}
				total += gt.Score(sub.Names).Score
			}
		}
		if total == 0 {
			b.Fatal("nothing scored")
		}
	}
}

// BenchmarkParseGroundTruth measures reading one ground truth, done once per task.
func BenchmarkParseGroundTruth(b *testing.B) {
	doc := []byte(benchGroundTruth(7))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseGroundTruth(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGradeSubmissionsFolder grades 10,000 submission files on disk (40 tasks x 250
// repeats) end to end: finding the files, reading, scoring and the bootstrap summary.
func BenchmarkGradeSubmissionsFolder(b *testing.B) {
	const tasks, perTask = 40, 250
	dir := b.TempDir()
	var list []Task
	for i := range tasks {
		id := fmt.Sprintf("Scenario-%d", i)
		list = append(list, Task{ID: id, GroundTruth: []byte(benchGroundTruth(i))})
		if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
			b.Fatal(err)
		}
		for r := 1; r <= perTask; r++ {
			if err := os.WriteFile(filepath.Join(dir, id, fmt.Sprintf("%d.json", r)), benchSubmission(i, r), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		files, _, err := FindSubmissions(dir)
		if err != nil {
			b.Fatal(err)
		}
		results, problems, err := GradeSubmissions(context.Background(), list, files, GradeOptions{})
		if err != nil || len(problems) > 0 {
			b.Fatal(err, problems)
		}
		if s := Summarise(results); s.Episodes != tasks*perTask {
			b.Fatalf("%d episodes", s.Episodes)
		}
	}
}
