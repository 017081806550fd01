// Package arch holds no code: its test pins the dependency arrows that
// docs/ARCHITECTURE.md draws, so the document cannot drift from the code.
// A change that breaks an arrow fails TestImports with the path that broke it.
package arch
