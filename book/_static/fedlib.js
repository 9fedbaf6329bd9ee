// fedlib book: mark every table box whose table is wider than the box (is-overflowing) and whether it is scrolled
// to its last column (at-end), so fedlib.css can show a scroll cue.
(function () {
  "use strict";
  const BOXES = ".fedlib-table, .pst-scrollable-table-container";
  function update(box) {
    box.classList.toggle("is-overflowing", box.scrollWidth > box.clientWidth + 1);
    box.classList.toggle("at-end", box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
  }
  function mark() {
    document.querySelectorAll(BOXES).forEach(function (box) {
      update(box);
      if (!box.dataset.fedlibScroll) {
        box.dataset.fedlibScroll = "1";
        box.addEventListener("scroll", function () { update(box); }, { passive: true });
      }
    });
  }
  if (document.readyState === "complete") {
    mark();
  } else {
    window.addEventListener("load", mark);
  }
  window.addEventListener("resize", mark);
})();
