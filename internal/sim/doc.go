// Package sim owns the embedded simulated inference server: a real HTTP
// server whose continuous-batching engine imitates SGLang, vLLM, TGI,
// llama.cpp, Ollama and a plain OpenAI-compatible server on their own wire
// formats (one file each, registering its imitation of an engine of
// engine.Table(): Engines lists them), and records the ground
// truth of every request (when each chunk left, how many tokens it held) for
// tests to compare a client's figures against.
//
//	p, _ := sim.LoadProfile("tiny")
//	srv, url, stop, _ := sim.Start(ctx, p, "127.0.0.1:0", sim.Options{})
//	defer stop()
//	// … run a client against url …
//	truth, late := srv.Trace(), srv.Lateness()
//
// A profile (YAML, see Profile) gives the deployment, its performance model,
// its wire habits and its faults; README.md lists the options that make the
// simulator behave like particular real servers. Lateness tells whether the
// simulator kept its own schedule: figures taken while its steps ran late
// describe a starved simulator, not the profile.
package sim
