// Sorts a table.sortable by the column whose header button is pressed: numbers by the
// cells' data-v values (an empty one sorts last), text by the cells' text. Rows are moved,
// never rebuilt, so nothing is parsed as markup.
(function () {
  function key(cell, numeric) {
    if (!numeric) { return (cell.getAttribute("data-v") || cell.textContent).trim().toLowerCase(); }
    var v = cell.getAttribute("data-v");
    return v === null || v === "" ? null : parseFloat(v);
  }
  function sort(table, column, numeric, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var descending = th.getAttribute("aria-sort") === "ascending";
    rows.sort(function (a, b) {
      var x = key(a.cells[column], numeric), y = key(b.cells[column], numeric);
      if (x === null || y === null) { return x === y ? 0 : (x === null ? 1 : -1); }
      var c = x < y ? -1 : (x > y ? 1 : 0);
      return descending ? -c : c;
    });
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      var label = th.textContent;
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = label;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () { sort(table, column, th.classList.contains("num"), th); });
    });
  });
})();
