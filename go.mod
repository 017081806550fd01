module github.com/tokperf/tokperf

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/dlclark/regexp2/v2 v2.13.0
	github.com/goccy/go-yaml v1.19.2
	github.com/google/go-cmp v0.7.0
	github.com/openai/openai-go/v3 v3.99.0
	github.com/tiktoken-go/tokenizer v0.10.0
	golang.org/x/image v0.47.0
	golang.org/x/net v0.62.0
	golang.org/x/text v0.43.0
)

require (
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
