/* global document, Element, navigator */
// Copy buttons for secrets shown once. Loaded from our own origin: the CSP allows no inline script.
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const target = document.getElementById(button.getAttribute('data-copy'));
  if (target && navigator.clipboard) {
    navigator.clipboard.writeText(target.textContent.trim()).then(() => {
      button.textContent = 'Copied';
    });
  }
});
