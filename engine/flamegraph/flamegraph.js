// The flame graph's behaviour: details on hover, zoom on click, search.
// Geometry comes from the svg element's data-* attributes and each frame's
// data-s (first sample), data-n (samples) and data-d (depth), all written
// by WriteSVG. The pure functions (place, label, matchedSamples) take plain
// objects, so they can be checked apart from the DOM.
"use strict";
(function () {
	var svg = document.documentElement;
	var attr = function (el, name) { return parseFloat(el.getAttribute(name)); };
	var x0 = attr(svg, "data-x0"), width = attr(svg, "data-w"), cw = attr(svg, "data-cw");
	var total = attr(svg, "data-total");
	var labelPad = 3, minLabel = 3;

	// place says where frame f is drawn when frame z fills the width:
	// {x, w, ancestor}, or null when f is hidden. z's ancestors are drawn
	// full width; frames beside z's subtree are hidden.
	function place(f, z) {
		if (f.d < z.d) {
			if (f.s <= z.s && z.s + z.n <= f.s + f.n) {
				return { x: x0, w: width, ancestor: true };
			}
			return null;
		}
		if (z.s <= f.s && f.s + f.n <= z.s + z.n) {
			if (z.n === 0) {
				return { x: x0, w: width, ancestor: false };
			}
			return { x: x0 + (f.s - z.s) / z.n * width, w: f.n / z.n * width, ancestor: false };
		}
		return null;
	}

	// label is what fits of name in w pixels: the same rule as the Go
	// function label, counting code points.
	function label(name, w) {
		var fit = Math.floor((w - 2 * labelPad) / cw);
		if (fit < minLabel) {
			return "";
		}
		var chars = Array.from(name);
		if (chars.length <= fit) {
			return name;
		}
		return chars.slice(0, fit - 2).join("") + "..";
	}

	// matchedSamples counts the samples under frames for which match is
	// true, once each: a matching frame inside another adds nothing.
	function matchedSamples(frames, match) {
		var spans = [];
		frames.forEach(function (f) {
			if (match(f)) {
				spans.push([f.s, f.s + f.n]);
			}
		});
		spans.sort(function (a, b) { return a[0] - b[0]; });
		var sum = 0, end = -1;
		spans.forEach(function (sp) {
			if (sp[0] >= end) {
				sum += sp[1] - sp[0];
				end = sp[1];
			} else if (sp[1] > end) {
				sum += sp[1] - end;
				end = sp[1];
			}
		});
		return sum;
	}

	var frames = [];
	var root = null;
	var groups = document.querySelectorAll("#frames > g");
	for (var i = 0; i < groups.length; i++) {
		var g = groups[i];
		var info = g.querySelector("title").textContent;
		var f = {
			g: g, rect: g.querySelector("rect"), text: g.querySelector("text"),
			name: info.slice(0, info.lastIndexOf(" (")), info: info,
			s: attr(g, "data-s"), n: attr(g, "data-n"), d: attr(g, "data-d"),
		};
		f.fill = f.rect.getAttribute("fill");
		g.frame = f;
		frames.push(f);
		if (f.d === 0) {
			root = f;
		}
	}

	var details = document.getElementById("details");
	var resetButton = document.getElementById("reset");
	var searchButton = document.getElementById("search");
	var matched = document.getElementById("matched");
	var zoomed = root;
	var searching = null;

	// zoom redraws every frame so that z fills the width.
	function zoom(z) {
		zoomed = z;
		frames.forEach(function (f) {
			var p = place(f, z);
			if (p === null) {
				f.g.setAttribute("display", "none");
				return;
			}
			f.g.removeAttribute("display");
			f.g.classList.toggle("ancestor", p.ancestor);
			f.rect.setAttribute("x", p.x.toFixed(2));
			f.rect.setAttribute("width", p.w.toFixed(2));
			f.text.setAttribute("x", (p.x + labelPad).toFixed(2));
			f.text.textContent = label(f.name, p.w);
		});
		resetButton.setAttribute("visibility", z === root ? "hidden" : "visible");
	}

	function reset() {
		zoom(root);
	}

	// search colours the frames whose names match the regular expression
	// term and says what share of all samples they cover; "" clears.
	function search(term) {
		frames.forEach(function (f) { f.rect.setAttribute("fill", f.fill); });
		if (!term) {
			searching = null;
			matched.textContent = "";
			searchButton.textContent = "Search";
			return;
		}
		var re;
		try {
			re = new RegExp(term);
		} catch (e) {
			matched.textContent = "Bad regular expression: " + term;
			return;
		}
		var match = function (f) { return f.d > 0 && re.test(f.name); };
		frames.forEach(function (f) {
			if (match(f)) {
				f.rect.setAttribute("fill", "#d23cd8");
			}
		});
		var pct = total > 0 ? 100 * matchedSamples(frames, match) / total : 0;
		searching = term;
		matched.textContent = "Matched: " + pct.toFixed(2) + "%";
		searchButton.textContent = "Reset Search";
	}

	function askSearch() {
		if (searching !== null) {
			search("");
			return;
		}
		var term = window.prompt("Search for frames matching (regular expression):", "");
		if (term) {
			search(term);
		}
	}

	function frameOf(e) {
		var g = e.target.closest ? e.target.closest("#frames > g") : null;
		return g ? g.frame : null;
	}

	var plot = document.getElementById("frames");
	plot.addEventListener("mouseover", function (e) {
		var f = frameOf(e);
		if (f) {
			details.textContent = "Function: " + f.info;
		}
	});
	plot.addEventListener("mouseout", function () { details.textContent = " "; });
	plot.addEventListener("click", function (e) {
		var f = frameOf(e);
		if (f) {
			zoom(f);
		}
	});
	resetButton.addEventListener("click", reset);
	searchButton.addEventListener("click", askSearch);
	window.addEventListener("keydown", function (e) {
		if ((e.ctrlKey || e.metaKey) && e.key === "f") {
			e.preventDefault();
			askSearch();
		} else if (e.key === "Escape") {
			search("");
			reset();
		}
	});

	// For tests and the curious: the functions above, and a sign that the
	// script ran to the end.
	window.flamegraph = {
		place: place, label: label, matchedSamples: matchedSamples,
		zoom: function (i) { zoom(frames[i]); }, reset: reset, search: search,
		frames: frames,
	};
	svg.setAttribute("data-ready", String(frames.length));
})();
