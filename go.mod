module github.com/aa-grade/aa-grade

go 1.26.8

require (
	github.com/tidwall/gjson v1.20.0
	github.com/urfave/cli/v3 v3.14.0
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
)
